/*
 * trace_check.h -- a structural checker for Chrome Trace Event JSON, independent of the
 * reader under test (its own SAX pass with yajl; gzip through zlib). Included by the trace
 * tests; every JSON trace they make goes through tc_check_json().
 *
 * Checks: the file is well-formed JSON with a "traceEvents" array; every event has "ph";
 * every pid used is named by a process_name metadata event and every (pid, tid) of a
 * slice or flow by thread_name; X slices have numeric ts/dur >= 0 and nest per track (no
 * partial overlaps); flows are paired (one "s" and one "f" per id and category, f not
 * before s) and each end lies inside a slice of its track; counter args are all numbers.
 * Times are compared as exact integers (picoseconds from the microsecond text).
 */
#ifndef NCSIM_TRACE_CHECK_H
#define NCSIM_TRACE_CHECK_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

typedef struct tc_stats {
    uint64_t events, slices, flows, counters, metadata;
} tc_stats_t;

typedef struct tc_slice {
    uint64_t pid, tid, ts, end;
} tc_slice_t;

typedef struct tc_flow {
    uint64_t id, pid, tid, ts;
    char cat[32];
    int is_f;
} tc_flow_t;

typedef struct tc_pt {
    uint64_t pid, tid;
} tc_pt_t;

typedef struct tc_state {
    int depth, in_events, in_args, skip;
    char key[64], topkey[64];
    /* current event */
    char ph[8], name[64], cat[32], argname[128];
    int has_pid, has_tid, has_ts, has_dur, has_id, bad_num, args_nonnum, nargs;
    uint64_t pid, tid, ts, dur, id;
    /* collected */
    tc_slice_t *sl;
    size_t nsl, capsl;
    tc_flow_t *fl;
    size_t nfl, capfl;
    tc_pt_t *pnamed, *tnamed, *tused;
    size_t npn, ntn, ntu, cappn, captn, captu;
    uint64_t *pused;
    size_t npu, cappu;
    int saw_events;
    char err[500];
    tc_stats_t st;
} tc_state_t;

static void tc_fail(tc_state_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tc_fail(tc_state_t *s, const char *fmt, ...)
{
    if (s->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
}

static void *tc_push(void **arr, size_t *n, size_t *cap, size_t elem)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *arr = realloc(*arr, *cap * elem);
        if (!*arr)
            abort();
    }
    return (char *)*arr + (*n)++ * elem;
}

/* "12.345678" (microseconds) -> picoseconds, exactly; -1 when not a plain decimal. */
static int tc_us_to_ps(const char *s, size_t n, uint64_t *out)
{
    uint64_t ip = 0, fp = 0;
    size_t i = 0;
    int digits = 0, fd = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++)
        ip = ip * 10 + (uint64_t)(s[i] - '0');
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, fd++) {
            if (fd < 6)
                fp = fp * 10 + (uint64_t)(s[i] - '0');
            else if (s[i] != '0')
                return -1; /* finer than a picosecond */
        }
    }
    if (fd > 6)
        fd = 6;
    if (i != n || !digits)
        return -1;
    for (; fd < 6; fd++)
        fp *= 10;
    *out = ip * 1000000 + fp;
    return 0;
}

static int tc_uint(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (!n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

static void tc_copy(char *dst, size_t cap, const void *src, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void tc_event_begin(tc_state_t *s)
{
    s->ph[0] = s->name[0] = s->cat[0] = s->argname[0] = '\0';
    s->has_pid = s->has_tid = s->has_ts = s->has_dur = s->has_id = 0;
    s->bad_num = s->args_nonnum = s->nargs = 0;
}

static void tc_event_end(tc_state_t *s)
{
    s->st.events++;
    if (!s->ph[0]) {
        tc_fail(s, "event %llu has no \"ph\"", (unsigned long long)s->st.events);
        return;
    }
    if (s->bad_num) {
        tc_fail(s, "event %llu (%s %s): pid, tid, id, ts or dur is not a plain number",
                (unsigned long long)s->st.events, s->ph, s->name);
        return;
    }
    if (strcmp(s->ph, "M") == 0) {
        s->st.metadata++;
        if (!s->has_pid) {
            tc_fail(s, "metadata event without pid");
            return;
        }
        if (strcmp(s->name, "process_name") == 0) {
            tc_pt_t *p = tc_push((void **)&s->pnamed, &s->npn, &s->cappn, sizeof *p);
            p->pid = s->pid;
            p->tid = 0;
            if (!s->argname[0])
                tc_fail(s, "process_name of pid %llu without a name",
                        (unsigned long long)s->pid);
        } else if (strcmp(s->name, "thread_name") == 0) {
            if (!s->has_tid) {
                tc_fail(s, "thread_name without tid");
                return;
            }
            tc_pt_t *p = tc_push((void **)&s->tnamed, &s->ntn, &s->captn, sizeof *p);
            p->pid = s->pid;
            p->tid = s->tid;
            if (!s->argname[0])
                tc_fail(s, "thread_name of %llu/%llu without a name",
                        (unsigned long long)s->pid, (unsigned long long)s->tid);
        }
        return;
    }
    if (!s->has_pid) {
        tc_fail(s, "%s event '%s' without pid", s->ph, s->name);
        return;
    }
    uint64_t *pu = tc_push((void **)&s->pused, &s->npu, &s->cappu, sizeof *pu);
    *pu = s->pid;
    if (strcmp(s->ph, "C") == 0) {
        s->st.counters++;
        if (!s->has_ts || !s->nargs || s->args_nonnum)
            tc_fail(s, "counter '%s' at pid %llu: missing ts or a non-numeric value", s->name,
                    (unsigned long long)s->pid);
        return;
    }
    if (strcmp(s->ph, "X") == 0 || strcmp(s->ph, "s") == 0 || strcmp(s->ph, "f") == 0) {
        if (!s->has_tid || !s->has_ts) {
            tc_fail(s, "%s event '%s' without tid or ts", s->ph, s->name);
            return;
        }
        tc_pt_t *t = tc_push((void **)&s->tused, &s->ntu, &s->captu, sizeof *t);
        t->pid = s->pid;
        t->tid = s->tid;
    }
    if (strcmp(s->ph, "X") == 0) {
        s->st.slices++;
        if (!s->has_dur) {
            tc_fail(s, "slice '%s' without dur", s->name);
            return;
        }
        tc_slice_t *x = tc_push((void **)&s->sl, &s->nsl, &s->capsl, sizeof *x);
        x->pid = s->pid;
        x->tid = s->tid;
        x->ts = s->ts;
        x->end = s->ts + s->dur;
    } else if (strcmp(s->ph, "s") == 0 || strcmp(s->ph, "f") == 0) {
        if (!s->has_id) {
            tc_fail(s, "flow event without id");
            return;
        }
        tc_flow_t *f = tc_push((void **)&s->fl, &s->nfl, &s->capfl, sizeof *f);
        f->id = s->id;
        f->pid = s->pid;
        f->tid = s->tid;
        f->ts = s->ts;
        f->is_f = s->ph[0] == 'f';
        snprintf(f->cat, sizeof f->cat, "%s", s->cat);
    } else if (strcmp(s->ph, "B") == 0 || strcmp(s->ph, "E") == 0) {
        tc_fail(s, "B/E events are not expected in ncsim traces");
    }
}

static int tc_scalar(tc_state_t *s, const char *v, size_t n, int is_num, int is_str)
{
    if (s->skip)
        return 1;
    if (s->in_events && s->depth == 3) {
        if (strcmp(s->key, "ph") == 0 && is_str)
            tc_copy(s->ph, sizeof s->ph, v, n);
        else if (strcmp(s->key, "name") == 0 && is_str)
            tc_copy(s->name, sizeof s->name, v, n);
        else if (strcmp(s->key, "cat") == 0 && is_str)
            tc_copy(s->cat, sizeof s->cat, v, n);
        else if (strcmp(s->key, "pid") == 0) {
            s->has_pid = 1;
            s->bad_num |= !is_num || tc_uint(v, n, &s->pid);
        } else if (strcmp(s->key, "tid") == 0) {
            s->has_tid = 1;
            s->bad_num |= !is_num || tc_uint(v, n, &s->tid);
        } else if (strcmp(s->key, "id") == 0) {
            s->has_id = 1;
            s->bad_num |= !is_num || tc_uint(v, n, &s->id);
        } else if (strcmp(s->key, "ts") == 0) {
            s->has_ts = 1;
            s->bad_num |= !is_num || tc_us_to_ps(v, n, &s->ts);
        } else if (strcmp(s->key, "dur") == 0) {
            s->has_dur = 1;
            s->bad_num |= !is_num || tc_us_to_ps(v, n, &s->dur);
        }
    } else if (s->in_events && s->depth == 4 && s->in_args) {
        s->nargs++;
        if (!is_num)
            s->args_nonnum = 1;
        if (strcmp(s->key, "name") == 0 && is_str)
            tc_copy(s->argname, sizeof s->argname, v, n);
    }
    return 1;
}

static int tc_null(void *c)
{
    return tc_scalar(c, "", 0, 0, 0);
}
static int tc_bool(void *c, int b)
{
    (void)b;
    return tc_scalar(c, "", 0, 0, 0);
}
static int tc_number(void *c, const char *v, size_t n)
{
    return tc_scalar(c, v, n, 1, 0);
}
static int tc_string(void *c, const unsigned char *v, size_t n)
{
    return tc_scalar(c, (const char *)v, n, 0, 1);
}
static int tc_start(void *c, int is_map)
{
    tc_state_t *s = c;
    s->depth++;
    if (s->skip)
        return 1;
    if (s->depth == 1 && !is_map) {
        tc_fail(s, "the top level is not an object");
        return 0;
    }
    if (s->depth == 2) {
        if (strcmp(s->topkey, "traceEvents") == 0 && !is_map) {
            s->in_events = 1;
            s->saw_events = 1;
        } else {
            s->skip = s->depth;
        }
    } else if (s->in_events && s->depth == 3) {
        if (!is_map) {
            tc_fail(s, "an event is not an object");
            return 0;
        }
        tc_event_begin(s);
    } else if (s->in_events && s->depth == 4 && is_map && strcmp(s->key, "args") == 0) {
        s->in_args = 1;
    } else if (s->depth > 2) {
        if (s->in_args && s->depth == 5)
            s->args_nonnum = 1; /* a nested value is not a number */
        s->skip = s->depth;
    }
    return 1;
}
static int tc_start_map(void *c)
{
    return tc_start(c, 1);
}
static int tc_start_array(void *c)
{
    return tc_start(c, 0);
}
static int tc_end(void *c)
{
    tc_state_t *s = c;
    if (s->skip) {
        if (s->skip == s->depth)
            s->skip = 0;
    } else if (s->in_events && s->depth == 3) {
        tc_event_end(s);
    } else if (s->in_events && s->depth == 4) {
        s->in_args = 0;
    } else if (s->in_events && s->depth == 2) {
        s->in_events = 0;
    }
    s->depth--;
    return 1;
}
static int tc_key(void *c, const unsigned char *k, size_t n)
{
    tc_state_t *s = c;
    if (s->depth == 1)
        tc_copy(s->topkey, sizeof s->topkey, k, n);
    else
        tc_copy(s->key, sizeof s->key, k, n);
    return 1;
}

static int tc_cmp_pt(const void *a, const void *b)
{
    const tc_pt_t *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}
static int tc_cmp_slice(const void *a, const void *b)
{
    const tc_slice_t *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end; /* the enclosing one first */
}
static int tc_cmp_flow(const void *a, const void *b)
{
    const tc_flow_t *x = a, *y = b;
    int c = strcmp(x->cat, y->cat);
    if (c)
        return c;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->is_f - y->is_f;
}

/* Is (pid, tid, ts) inside a slice of its track? Slices sorted by tc_cmp_slice: find the
 * last slice starting at or before ts, then look back a little for an enclosing one. */
static int tc_inside(const tc_state_t *s, uint64_t pid, uint64_t tid, uint64_t ts)
{
    tc_slice_t key = {pid, tid, ts, 0};
    size_t lo = 0, hi = s->nsl;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tc_cmp_slice(&s->sl[mid], &key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = 0; k < 64 && lo > 0; k++, lo--) {
        const tc_slice_t *x = &s->sl[lo - 1];
        if (x->pid != pid || x->tid != tid)
            break;
        if (x->ts <= ts && ts <= x->end)
            return 1;
    }
    return 0;
}

static void tc_final_checks(tc_state_t *s)
{
    if (!s->saw_events)
        tc_fail(s, "no \"traceEvents\" array");
    if (s->npn)
        qsort(s->pnamed, s->npn, sizeof *s->pnamed, tc_cmp_pt);
    if (s->ntn)
        qsort(s->tnamed, s->ntn, sizeof *s->tnamed, tc_cmp_pt);
    for (size_t i = 0; i < s->npu && !s->err[0]; i++) {
        tc_pt_t key = {s->pused[i], 0};
        if (!s->npn || !bsearch(&key, s->pnamed, s->npn, sizeof key, tc_cmp_pt))
            tc_fail(s, "pid %llu has no process_name", (unsigned long long)s->pused[i]);
    }
    for (size_t i = 0; i < s->ntu && !s->err[0]; i++)
        if (!s->ntn || !bsearch(&s->tused[i], s->tnamed, s->ntn, sizeof s->tused[i], tc_cmp_pt))
            tc_fail(s, "pid %llu tid %llu has no thread_name",
                    (unsigned long long)s->tused[i].pid, (unsigned long long)s->tused[i].tid);
    /* nesting: a stack of open slices per track */
    if (s->nsl)
        qsort(s->sl, s->nsl, sizeof *s->sl, tc_cmp_slice);
    size_t *stack = malloc((s->nsl + 1) * sizeof *stack);
    size_t depth = 0;
    for (size_t i = 0; i < s->nsl && !s->err[0]; i++) {
        const tc_slice_t *x = &s->sl[i];
        if (depth && (s->sl[stack[0]].pid != x->pid || s->sl[stack[0]].tid != x->tid))
            depth = 0;
        while (depth && s->sl[stack[depth - 1]].end <= x->ts)
            depth--;
        if (depth && x->end > s->sl[stack[depth - 1]].end)
            tc_fail(s,
                    "slices overlap partially on pid %llu tid %llu: [%llu, %llu) ps and "
                    "[%llu, %llu) ps",
                    (unsigned long long)x->pid, (unsigned long long)x->tid,
                    (unsigned long long)s->sl[stack[depth - 1]].ts,
                    (unsigned long long)s->sl[stack[depth - 1]].end, (unsigned long long)x->ts,
                    (unsigned long long)x->end);
        stack[depth++] = i;
    }
    free(stack);
    /* flows: exactly one s and one f per (cat, id) */
    if (s->nfl)
        qsort(s->fl, s->nfl, sizeof *s->fl, tc_cmp_flow);
    for (size_t i = 0; i < s->nfl && !s->err[0];) {
        size_t j = i;
        while (j < s->nfl && s->fl[j].id == s->fl[i].id && strcmp(s->fl[j].cat, s->fl[i].cat) == 0)
            j++;
        if (j - i != 2 || s->fl[i].is_f || !s->fl[i + 1].is_f)
            tc_fail(s, "flow %s/%llu is not one s and one f", s->fl[i].cat,
                    (unsigned long long)s->fl[i].id);
        else if (s->fl[i + 1].ts < s->fl[i].ts)
            tc_fail(s, "flow %s/%llu ends before it starts", s->fl[i].cat,
                    (unsigned long long)s->fl[i].id);
        else if (!tc_inside(s, s->fl[i].pid, s->fl[i].tid, s->fl[i].ts) ||
                 !tc_inside(s, s->fl[i + 1].pid, s->fl[i + 1].tid, s->fl[i + 1].ts))
            tc_fail(s, "flow %s/%llu has an end outside any slice of its track", s->fl[i].cat,
                    (unsigned long long)s->fl[i].id);
        s->st.flows++;
        i = j;
    }
}

/* Check a JSON trace (gzipped or not). 0 when it passes; otherwise -1 and a message. */
static int tc_check_json(const char *path, tc_stats_t *stats, char *msg, size_t msglen)
{
    static const yajl_callbacks cb = {tc_null,      tc_bool, NULL,   NULL,
                                      tc_number,    tc_string, tc_start_map,
                                      tc_key,       tc_end,    tc_start_array,
                                      tc_end};
    tc_state_t *s = calloc(1, sizeof *s);
    gzFile gz = gzopen(path, "rb");
    if (!s || !gz) {
        snprintf(msg, msglen, "cannot open %s", path);
        free(s);
        if (gz)
            gzclose(gz);
        return -1;
    }
    yajl_handle h = yajl_alloc(&cb, NULL, s);
    unsigned char buf[65536];
    int n;
    int ok = 1;
    while (ok && (n = gzread(gz, buf, sizeof buf)) > 0)
        if (yajl_parse(h, buf, (size_t)n) != yajl_status_ok) {
            unsigned char *e = yajl_get_error(h, 1, buf, (size_t)n);
            tc_fail(s, "not well-formed JSON: %s", (const char *)e);
            yajl_free_error(h, e);
            ok = 0;
        }
    if (ok && yajl_complete_parse(h) != yajl_status_ok)
        tc_fail(s, "not well-formed JSON: truncated");
    yajl_free(h);
    gzclose(gz);
    if (!s->err[0])
        tc_final_checks(s);
    int rc = s->err[0] ? -1 : 0;
    size_t at = (size_t)snprintf(msg, msglen, "%.200s: ", path);
    if (at < msglen)
        snprintf(msg + at, msglen - at, "%s", s->err[0] ? s->err : "ok");
    if (stats)
        *stats = s->st;
    free(s->sl);
    free(s->fl);
    free(s->pnamed);
    free(s->tnamed);
    free(s->tused);
    free(s->pused);
    free(s);
    return rc;
}

#endif
