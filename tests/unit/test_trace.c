/*
 * test_trace.c -- traces/: exact number formatting, writer -> reader round trips of every
 * record kind in the three formats, the structural checker (on good and on broken files),
 * and `ncsim run --trace` end to end: content, filters, determinism, errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "trace.h"
#include "trace_check.h"
#include "trace_internal.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    return 0;
}

static void assert_checker_ok(const char *path, tc_stats_t *st)
{
    char msg[1024];
    int rc = tc_check_json(path, st, msg, sizeof msg);
    if (rc)
        fprintf(stderr, "checker: %s\n", msg);
    assert_int_equal(rc, 0);
}

/* ---- numbers ------------------------------------------------------------------------------------ */

static void test_numbers(void **state)
{
    (void)state;
    char b[64];
    size_t n = trc_fmt_fixed(b, 1234567, 6);
    b[n] = 0;
    assert_string_equal(b, "1.234567");
    n = trc_fmt_fixed(b, 1500000, 6);
    b[n] = 0;
    assert_string_equal(b, "1.5");
    n = trc_fmt_fixed(b, 42000, 3);
    b[n] = 0;
    assert_string_equal(b, "42");
    n = trc_fmt_fixed(b, 7, 6);
    b[n] = 0;
    assert_string_equal(b, "0.000007");
    n = trc_fmt_u64(b, UINT64_MAX);
    b[n] = 0;
    assert_string_equal(b, "18446744073709551615");
    /* every picosecond value written as microseconds reads back exactly */
    for (uint64_t v = 0; v < 3000000; v += 997) {
        n = trc_fmt_fixed(b, v * 1000003ull, 6);
        uint64_t back = 0;
        assert_int_equal(trc_parse_scaled(b, n, 6, &back), 0);
        assert_true(back == v * 1000003ull);
    }
    uint64_t v;
    assert_int_equal(trc_parse_scaled("1.5e3", 5, 3, &v), 0);
    assert_true(v == 1500000);
    assert_int_equal(trc_parse_scaled("2.0004", 6, 3, &v), 0);
    assert_true(v == 2000); /* rounded to the nearest */
    assert_int_equal(trc_parse_scaled("-1", 2, 0, &v), -1);
    assert_int_equal(trc_parse_scaled("1x", 2, 0, &v), -1);
    assert_int_equal(trc_parse_scaled("", 0, 0, &v), -1);
    n = trc_fmt_f64(b, 0.1);
    b[n] = 0;
    assert_string_equal(b, "0.1");
    n = trc_fmt_f64(b, 103.079);
    b[n] = 0;
    assert_string_equal(b, "103.079");
    n = trc_fmt_f64(b, -2.5);
    b[n] = 0;
    assert_string_equal(b, "-2.5");
    n = trc_fmt_f64(b, 42);
    b[n] = 0;
    assert_string_equal(b, "42");
    /* every double reads back identically: short decimals (the fast path), long ones,
     * tiny and huge ones */
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double d;
        switch (i % 4) {
        case 0: d = (double)(x % 100000000000ull) / 1000.0; break;   /* three decimals */
        case 1: d = (double)(x % 1000000000ull) / 1e6; break;        /* six decimals */
        case 2: d = (double)(x >> 11) * 0x1p-53 * 1e4; break;       /* full precision */
        default: d = (double)(x >> 11) * 0x1p-53 * ((i & 8) ? 1e-12 : 1e18); break;
        }
        if (i & 16)
            d = -d;
        n = trc_fmt_f64(b, d);
        assert_true(n > 0 && n < 32);
        b[n] = 0;
        assert_true(strtod(b, NULL) == d);
    }
    assert_int_equal(trc_format_for_path("a.json.gz"), TRC_FORMAT_JSON_GZ);
    assert_int_equal(trc_format_for_path("a.json"), TRC_FORMAT_JSON);
    assert_int_equal(trc_format_for_path("a.pftrace"), TRC_FORMAT_PFTRACE);
    assert_int_equal(trc_format_for_path("a.txt"), TRC_FORMAT_COUNT);
    uint32_t q;
    assert_int_equal(trc_track_kind_of_tid(trc_tid(3, TRC_TRACK_DMA_QUEUE, 15), &q),
                     TRC_TRACK_DMA_QUEUE);
    assert_int_equal(q, 15);
    assert_int_equal(trc_track_kind_of_tid(trc_tid(10001, TRC_TRACK_LINK, 2), &q),
                     TRC_TRACK_LINK);
    assert_int_equal(q, 2);
    assert_int_equal(trc_track_kind_of_tid(trc_tid(trc_pid_links(3), TRC_TRACK_LINK, 599), &q),
                     TRC_TRACK_LINK);
    assert_int_equal(q, 599);
    assert_int_equal(trc_track_kind_of_tid(trc_tid(1, TRC_TRACK_COLLECTIVE, 0), &q),
                     TRC_TRACK_COLLECTIVE);
    assert_true(trc_chip_of_pid(trc_pid_links(3)) == 3);
    assert_true(trc_chip_of_pid(trc_pid_chip(2)) == 2);
    assert_true(trc_chip_of_pid(trc_pid_core(5)) == -1);
    assert_true(trc_core_of_pid(trc_pid_links(0)) == -1);
}

/* ---- round trips ---------------------------------------------------------------------------------- */

#define MAXREC 64

typedef struct collected {
    int n;
    trc_record_t r[MAXREC];
    char strings[MAXREC][8][160]; /* copies of the strings of each record */
} collected_t;

/* Copy a record and the strings it points to. */
static void keep(collected_t *c, const trc_record_t *r)
{
    assert_true(c->n < MAXREC);
    int i = c->n++;
    c->r[i] = *r;
    int k = 0;
#define KEEP(ptr)                                                                              \
    do {                                                                                       \
        snprintf(c->strings[i][k], sizeof c->strings[i][k], "%s", (ptr) ? (ptr) : "");       \
        (ptr) = c->strings[i][k++];                                                            \
    } while (0)
    trc_record_t *x = &c->r[i];
    switch (x->kind) {
    case TRC_REC_PROCESS: KEEP(x->u.process.name); break;
    case TRC_REC_TRACK: KEEP(x->u.track.name); break;
    case TRC_REC_COUNTER:
        KEEP(x->u.counter.name);
        KEEP(x->u.counter.unit);
        break;
    case TRC_REC_FLOW:
        KEEP(x->u.flow.cat);
        KEEP(x->u.flow.name);
        break;
    case TRC_REC_SLICE: {
        KEEP(x->u.slice.name);
        unsigned nf;
        const trc_field_t *f = trc_slice_fields((trc_slice_kind_t)x->u.slice.kind, &nf);
        for (unsigned j = 0; j < nf; j++)
            if (f[j].type == TRC_FT_STR) {
                const char **p = (const char **)((char *)&x->u.slice.a + f[j].offset);
                KEEP(*p);
            }
        break;
    }
    case TRC_REC_RUN: {
        unsigned nf;
        const trc_field_t *f = trc_run_fields(&nf);
        for (unsigned j = 0; j < nf; j++)
            if (f[j].type == TRC_FT_STR) {
                const char **p = (const char **)((char *)&x->u.run + f[j].offset);
                KEEP(*p);
            }
        break;
    }
    default: break;
    }
#undef KEEP
}

static int collect(void *ctx, const trc_record_t *r)
{
    keep(ctx, r);
    return 0;
}

static void same_fields(const trc_field_t *f, unsigned nf, const void *a, const void *b)
{
    for (unsigned j = 0; j < nf; j++) {
        const char *pa = (const char *)a + f[j].offset, *pb = (const char *)b + f[j].offset;
        if (f[j].type == TRC_FT_STR) {
            const char *sa, *sb;
            memcpy(&sa, pa, sizeof sa);
            memcpy(&sb, pb, sizeof sb);
            assert_string_equal(sa ? sa : "", sb ? sb : "");
        } else if (f[j].type == TRC_FT_F64) {
            double da, db;
            memcpy(&da, pa, sizeof da);
            memcpy(&db, pb, sizeof db);
            assert_true(da == db);
        } else {
            uint64_t ua, ub;
            memcpy(&ua, pa, sizeof ua);
            memcpy(&ub, pb, sizeof ub);
            if (ua != ub)
                fprintf(stderr, "field %s: %llu != %llu\n", f[j].key, (unsigned long long)ua,
                        (unsigned long long)ub);
            assert_true(ua == ub);
        }
    }
}

static void build_records(collected_t *c)
{
    memset(c, 0, sizeof *c);
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_RUN;
    r.u.run.generator = "ncsim test";
    r.u.run.program = "dir/prog \"quoted\".nca";
    r.u.run.arch = "trn1";
    r.u.run.chips = 1;
    r.u.run.cores = 2;
    r.u.run.timing_only = 1;
    r.u.run.peak_flops_per_core = 91750400000000.0;
    r.u.run.hbm_peak_gbps = 820;
    r.u.run.dma_peak_gbps = 435.2;
    r.u.run.window_start = 1000;
    r.u.run.window_end = 9000000;
    r.u.run.engines = "pe,dma";
    keep(c, &r);
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_PROCESS;
    r.u.process.pid = 1;
    r.u.process.name = "chip 0 core 0";
    keep(c, &r);
    r.u.process.pid = trc_pid_chip(0);
    r.u.process.name = "chip 0";
    keep(c, &r);
    r.u.process.pid = trc_pid_links(0);
    r.u.process.name = "chip 0 links";
    keep(c, &r);
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_TRACK;
    r.u.track.pid = 1;
    r.u.track.tid = trc_tid(1, TRC_TRACK_ENGINE, 0);
    r.u.track.name = "pe";
    keep(c, &r);
    r.u.track.tid = trc_tid(1, TRC_TRACK_DMA_QUEUE, 3);
    r.u.track.name = "dma q3";
    keep(c, &r);
    r.u.track.pid = trc_pid_links(0);
    r.u.track.tid = trc_tid(trc_pid_links(0), TRC_TRACK_LINK, 1);
    r.u.track.name = "link 0->1";
    keep(c, &r);
    r.u.track.pid = 1;
    r.u.track.tid = trc_tid(1, TRC_TRACK_COLLECTIVE, 0);
    r.u.track.name = "cc 0";
    keep(c, &r);
    /* a post on pe at 1.000001 us released the transfer at 2.5 us; a dma flow too */
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_SLICE;
    r.u.slice.kind = TRC_SLICE_INSTR;
    r.u.slice.pid = 1;
    r.u.slice.tid = trc_tid(1, TRC_TRACK_ENGINE, 0);
    r.u.slice.ts_ps = 1000001;
    r.u.slice.dur_ps = 182857;
    r.u.slice.name = "matmul";
    trc_instr_args_t *a = &r.u.slice.a.instr;
    a->index = 7;
    a->line = 42;
    /* '#' in the text: sent whole (the .pftrace template uses '#' for numbers) */
    a->operands = "acc[:, 0], a[\\x], \"b\"\n\ttab | wait 3 >= 12 | post #x";
    a->ii = 182857;
    a->latency = 274286;
    a->bytes = 393216;
    a->flops = 16777216;
    a->hw_flops = 16777216;
    a->wait = 1500;
    a->wait_semaphore = 1000;
    a->wait_port = 500;
    a->semaphore = "b_ready";
    a->stall = "semaphore b_ready";
    a->wait_collective = 250;
    keep(c, &r);
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_FLOW;
    r.u.flow.id = 1;
    r.u.flow.cat = "semaphore";
    r.u.flow.name = "b_ready";
    r.u.flow.from_pid = 1;
    r.u.flow.from_tid = trc_tid(1, TRC_TRACK_ENGINE, 0);
    r.u.flow.from_ts_ps = 1000001;
    r.u.flow.to_pid = 1;
    r.u.flow.to_tid = trc_tid(1, TRC_TRACK_DMA_QUEUE, 3);
    r.u.flow.to_ts_ps = 2500000;
    keep(c, &r);
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_SLICE;
    r.u.slice.kind = TRC_SLICE_DMA;
    r.u.slice.pid = 1;
    r.u.slice.tid = trc_tid(1, TRC_TRACK_DMA_QUEUE, 3);
    r.u.slice.ts_ps = 2500000;
    r.u.slice.dur_ps = 700123;
    r.u.slice.name = "hbm->sbuf";
    trc_dma_args_t *d = &r.u.slice.a.dma;
    d->index = 3;
    d->issuer = "sp";
    d->line = 12;
    /* clauses: a template and its numbers in .pftrace (negative, names with digits) */
    d->operands = "xs, x, queue=3 | wait s1 >= -2 | wait 7 == 12 | post done += 3 | post 7";
    d->pieces = 128;
    d->piece_bytes = 1024; /* whole: a varint in .pftrace */
    d->efficiency = 0.886657;
    d->cap_gbps = 265.288;
    d->engines = 16;
    d->dma_share = 32.8;
    d->limited_engines = 600123;
    d->limited_hbm = 100000;
    d->cost = "fixed 1 ns"; /* text in the record wins over the numbers (older traces) */
    d->bytes = 131072;
    d->src = "hbm";
    d->dst = "sbuf";
    d->accumulate = 1;
    d->queued = 500000;
    d->gbps = 187.2123456789;
    keep(c, &r);
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_SLICE;
    r.u.slice.kind = TRC_SLICE_LINK;
    r.u.slice.pid = trc_pid_links(0);
    r.u.slice.tid = trc_tid(trc_pid_links(0), TRC_TRACK_LINK, 1);
    r.u.slice.ts_ps = 3000000;
    r.u.slice.dur_ps = 1000;
    r.u.slice.name = "send";
    r.u.slice.a.link.bytes = 65536;
    r.u.slice.a.link.src_chip = 0;
    r.u.slice.a.link.dst_chip = 1;
    r.u.slice.a.link.gbps = 100;
    r.u.slice.a.link.collective = "all_reduce";
    r.u.slice.a.link.collective_id = 3;
    r.u.slice.a.link.step = 2;
    r.u.slice.a.link.from_core = 1;
    r.u.slice.a.link.to_core = 2;
    r.u.slice.a.link.group = "g";
    r.u.slice.a.link.link_gbps = 103.079;
    keep(c, &r);
    r.u.slice.kind = TRC_SLICE_COLLECTIVE;
    r.u.slice.pid = 1;
    r.u.slice.tid = trc_tid(1, TRC_TRACK_COLLECTIVE, 0);
    r.u.slice.name = "all_reduce";
    memset(&r.u.slice.a, 0, sizeof r.u.slice.a);
    r.u.slice.a.collective.index = 1;
    r.u.slice.a.collective.group = "g";
    r.u.slice.a.collective.step = 2;
    r.u.slice.a.collective.bytes = 4096;
    r.u.slice.a.collective.collective = "all_reduce";
    r.u.slice.a.collective.collective_id = 3;
    r.u.slice.a.collective.nsteps = 6;
    r.u.slice.a.collective.phase = "reduce-scatter";
    r.u.slice.a.collective.algorithm = "ring";
    r.u.slice.a.collective.members = 4;
    r.u.slice.a.collective.size = 16384;
    r.u.slice.a.collective.to_core = 0; /* written although zero */
    r.u.slice.a.collective.reduce = 1;
    r.u.slice.a.collective.latency = 2000000;
    r.u.slice.a.collective.moving = 635783;
    r.u.slice.a.collective.gbps = 103.079;
    r.u.slice.a.collective.slowest = "core 3->core 0";
    r.u.slice.a.collective.bottleneck = "link 0->1";
    r.u.slice.a.collective.bottleneck_pct = 99.5;
    keep(c, &r);
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_COUNTER;
    r.u.counter.pid = trc_pid_chip(0);
    r.u.counter.name = "HBM bandwidth";
    r.u.counter.unit = "GB/s";
    r.u.counter.ts_ps = 2500000;
    r.u.counter.value = 187.25;
    keep(c, &r);
    r.u.counter.ts_ps = 3200000;
    r.u.counter.value = 0;
    keep(c, &r);
}

static void same_records(const collected_t *in, const collected_t *out);

static void roundtrip(trc_format_t fmt, const char *name)
{
    collected_t *in = calloc(1, sizeof *in), *out = calloc(1, sizeof *out);
    build_records(in);
    const char *path = tu_join(dir, name);
    trc_writer_t *w;
    char err[512];
    assert_int_equal(trc_writer_open(path, fmt, &w, err, sizeof err), NCSIM_OK);
    for (int i = 0; i < in->n; i++)
        assert_int_equal(trc_write(w, &in->r[i]), NCSIM_OK);
    assert_true(trc_writer_events(w) > 0);
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
    if (fmt != TRC_FORMAT_PFTRACE)
        assert_checker_ok(path, NULL);
    assert_int_equal(trc_read(path, collect, out, err, sizeof err), NCSIM_OK);
    same_records(in, out);
    free(in);
    free(out);
}

/* The same records in the same order; the flow comes when its second end is read. */
static void same_records(const collected_t *in, const collected_t *out)
{
    assert_int_equal(out->n, in->n);
    for (int i = 0; i < in->n; i++) {
        const trc_record_t *a = &in->r[i], *b = &out->r[i];
        assert_int_equal(a->kind, b->kind);
        switch (a->kind) {
        case TRC_REC_RUN: {
            unsigned nf;
            const trc_field_t *f = trc_run_fields(&nf);
            same_fields(f, nf, &a->u.run, &b->u.run);
            break;
        }
        case TRC_REC_PROCESS:
            assert_int_equal(a->u.process.pid, b->u.process.pid);
            assert_string_equal(a->u.process.name, b->u.process.name);
            break;
        case TRC_REC_TRACK:
            assert_int_equal(a->u.track.pid, b->u.track.pid);
            assert_int_equal(a->u.track.tid, b->u.track.tid);
            assert_string_equal(a->u.track.name, b->u.track.name);
            break;
        case TRC_REC_SLICE: {
            assert_int_equal(a->u.slice.kind, b->u.slice.kind);
            assert_int_equal(a->u.slice.pid, b->u.slice.pid);
            assert_int_equal(a->u.slice.tid, b->u.slice.tid);
            assert_true(a->u.slice.ts_ps == b->u.slice.ts_ps);
            assert_true(a->u.slice.dur_ps == b->u.slice.dur_ps);
            assert_string_equal(a->u.slice.name, b->u.slice.name);
            unsigned nf;
            const trc_field_t *f = trc_slice_fields((trc_slice_kind_t)a->u.slice.kind, &nf);
            same_fields(f, nf, &a->u.slice.a, &b->u.slice.a);
            break;
        }
        case TRC_REC_COUNTER:
            assert_int_equal(a->u.counter.pid, b->u.counter.pid);
            assert_string_equal(a->u.counter.name, b->u.counter.name);
            assert_string_equal(a->u.counter.unit, b->u.counter.unit);
            /* .pftrace counters are at whole nanoseconds */
            assert_true(a->u.counter.ts_ps / 1000 == b->u.counter.ts_ps / 1000);
            assert_true(a->u.counter.value == b->u.counter.value);
            break;
        case TRC_REC_FLOW:
            assert_string_equal(a->u.flow.cat, b->u.flow.cat);
            assert_string_equal(a->u.flow.name, b->u.flow.name);
            assert_int_equal(a->u.flow.from_tid, b->u.flow.from_tid);
            assert_int_equal(a->u.flow.to_tid, b->u.flow.to_tid);
            assert_true(a->u.flow.from_ts_ps == b->u.flow.from_ts_ps);
            assert_true(a->u.flow.to_ts_ps == b->u.flow.to_ts_ps);
            break;
        default: fail();
        }
    }
}

/* The debug annotations of each slice begin of a .pftrace, in file order. */
static int begin_annotations(const char *path, unsigned *counts, int max)
{
    size_t len;
    unsigned char *b = (unsigned char *)tu_read_file(path, &len);
    assert_non_null(b);
    pb_in_t file = {b, b + len};
    pb_field_t pkt;
    int n = 0;
    while (pb_next(&file, &pkt) > 0) {
        pb_in_t p = {pkt.data, pkt.data + pkt.len};
        pb_field_t f;
        while (pb_next(&p, &f) > 0) {
            if (f.field != PF_PKT_TRACK_EVENT)
                continue;
            pb_in_t e = {f.data, f.data + f.len};
            pb_field_t g;
            unsigned ann = 0;
            uint64_t type = 0;
            while (pb_next(&e, &g) > 0) {
                ann += g.field == PF_TE_DEBUG;
                if (g.field == PF_TE_TYPE)
                    type = g.v;
            }
            if (type == PF_TYPE_SLICE_BEGIN && n < max)
                counts[n++] = ann;
        }
    }
    free(b);
    return n;
}

/* .pftrace leaves out the arguments that follow from others and its reader puts them back:
 * each case next to the same slice where they do not follow. Strings of `stable` records are
 * known by address. */
static void test_pftrace_implied(void **state)
{
    (void)state;
    collected_t *in = calloc(1, sizeof *in), *out = calloc(1, sizeof *out);
    assert_non_null(in);
    assert_non_null(out);
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_PROCESS;
    r.u.process.pid = 1;
    r.u.process.name = "chip 0 core 0";
    keep(in, &r);
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_TRACK;
    r.u.track.pid = 1;
    r.u.track.tid = trc_tid(1, TRC_TRACK_ENGINE, 1);
    r.u.track.name = "act";
    keep(in, &r);
    r.u.track.tid = trc_tid(1, TRC_TRACK_DMA_QUEUE, 0);
    r.u.track.name = "dma q0";
    keep(in, &r);
    for (int follows = 1; follows >= 0; follows--) {
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_SLICE;
        trc_slice_t *s = &r.u.slice;
        s->kind = TRC_SLICE_INSTR;
        s->pid = 1;
        s->tid = trc_tid(1, TRC_TRACK_ENGINE, 1);
        s->ts_ps = follows ? 10000 : 20000;
        s->dur_ps = 1000;
        s->name = "activate";
        s->stable = 1;
        trc_instr_args_t *a = &s->a.instr;
        a->index = 1;
        a->operands = "ys, acc, gelu";
        a->ii = follows ? 1000 : 900;
        a->latency = 2000;
        a->flops = 10;
        a->hw_flops = follows ? 10 : 20;
        a->wait_semaphore = 100;
        a->wait_port = 200;
        a->wait = follows ? 300 : 400;
        a->semaphore = "mm";
        a->stall = "port";
        keep(in, &r);
    }
    static const char *const names[] = {"hbm->sbuf", "sbuf->hbm", "a->b->c"};
    static const char *const srcs[] = {"hbm", "psum", "a->b"}; /* 2: "->" in src: whole */
    static const char *const dsts[] = {"sbuf", "hbm", "c"};
    for (int k = 0; k < 3; k++) {
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_SLICE;
        trc_slice_t *s = &r.u.slice;
        s->kind = TRC_SLICE_DMA;
        s->pid = 1;
        s->tid = trc_tid(1, TRC_TRACK_DMA_QUEUE, 0);
        s->ts_ps = 30000 + 10000 * (uint64_t)k;
        s->dur_ps = 5000;
        s->name = names[k];
        s->stable = 1;
        trc_dma_args_t *d = &s->a.dma;
        d->index = (uint64_t)k;
        d->issuer = "sp";
        d->bytes = 4096;
        d->src = srcs[k];
        d->dst = dsts[k];
        d->fixed = 700;
        d->queue_wait = 300;
        d->queued = k == 0 ? 1000 : 1200;
        keep(in, &r);
    }
    const char *path = tu_join(dir, "implied.pftrace");
    trc_writer_t *w;
    char err[512];
    assert_int_equal(trc_writer_open(path, TRC_FORMAT_PFTRACE, &w, err, sizeof err), NCSIM_OK);
    for (int i = 0; i < in->n; i++)
        assert_int_equal(trc_write(w, &in->r[i]), NCSIM_OK);
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
    assert_int_equal(trc_read(path, collect, out, err, sizeof err), NCSIM_OK);
    same_records(in, out);
    /* ii, hw_flops and wait left out of the first slice; src, dst and queued of the first
     * transfer */
    unsigned counts[8];
    assert_int_equal(begin_annotations(path, counts, 8), 5);
    assert_int_equal(counts[0] + 3, counts[1]);
    assert_int_equal(counts[2] + 3, counts[3]);
    assert_int_equal(counts[3], counts[4]);
    free(in);
    free(out);
}

/* Interning by address only for stable records: a string whose buffer changes between two
 * records that are not stable is read anew; more than 998 counter tracks (the short track
 * numbers run out) keep their names and values. */
typedef struct counter_check {
    int counters, bad;
    char sem[2][16];
    int slices;
} counter_check_t;

static int check_counters(void *ctx, const trc_record_t *r)
{
    counter_check_t *c = ctx;
    if (r->kind == TRC_REC_COUNTER) {
        int k = -1;
        if (sscanf(r->u.counter.name, "c%d", &k) != 1 || (double)k != r->u.counter.value ||
            r->u.counter.ts_ps != (uint64_t)k * 1000)
            c->bad++;
        c->counters++;
    } else if (r->kind == TRC_REC_SLICE && c->slices < 2) {
        snprintf(c->sem[c->slices++], sizeof c->sem[0], "%s", r->u.slice.a.instr.semaphore);
    }
    return 0;
}

/* A .pftrace writer at path with process 1 ("chip 0 core 0") declared. */
static trc_writer_t *open_pftrace_core0(const char *path)
{
    trc_writer_t *w;
    char err[512];
    assert_int_equal(trc_writer_open(path, TRC_FORMAT_PFTRACE, &w, err, sizeof err), NCSIM_OK);
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_PROCESS;
    r.u.process.pid = 1;
    r.u.process.name = "chip 0 core 0";
    assert_int_equal(trc_write(w, &r), NCSIM_OK);
    return w;
}

/* Core 0's pe track in a writer from open_pftrace_core0. */
static void write_pe_track(trc_writer_t *w)
{
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_TRACK;
    r.u.track.pid = 1;
    r.u.track.tid = trc_tid(1, TRC_TRACK_ENGINE, 0);
    r.u.track.name = "pe";
    assert_int_equal(trc_write(w, &r), NCSIM_OK);
}

static void test_pftrace_stable_and_counters(void **state)
{
    (void)state;
    const char *path = tu_join(dir, "counters.pftrace");
    trc_writer_t *w = open_pftrace_core0(path);
    char err[512];
    trc_record_t r;
    write_pe_track(w);
    char buf[16] = "alpha";
    for (int k = 0; k < 2; k++) {
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_SLICE;
        r.u.slice.kind = TRC_SLICE_INSTR;
        r.u.slice.pid = 1;
        r.u.slice.tid = trc_tid(1, TRC_TRACK_ENGINE, 0);
        r.u.slice.ts_ps = 1000 * (uint64_t)k;
        r.u.slice.dur_ps = 500;
        r.u.slice.name = "matmul";
        r.u.slice.a.instr.semaphore = buf;
        assert_int_equal(trc_write(w, &r), NCSIM_OK);
        snprintf(buf, sizeof buf, "beta");
    }
    enum { N = 1100 };
    static char names[N][16];
    for (int k = 0; k < N; k++) {
        snprintf(names[k], sizeof names[k], "c%d", k);
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_COUNTER;
        r.u.counter = (trc_counter_t){1, names[k], "bytes", (uint64_t)k * 1000, k, 1};
        assert_int_equal(trc_write(w, &r), NCSIM_OK);
    }
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
    counter_check_t c;
    memset(&c, 0, sizeof c);
    assert_int_equal(trc_read(path, check_counters, &c, err, sizeof err), NCSIM_OK);
    assert_int_equal(c.counters, N);
    assert_int_equal(c.bad, 0);
    assert_string_equal(c.sem[0], "alpha");
    assert_string_equal(c.sem[1], "beta");
}

/* Counter values of one nanosecond on different tracks share one event (the first as its
 * counter value, the others as extra counters): every value reads back in the order it was
 * written, on its track and at its time, whatever the mix: whole and real values (a whole
 * value after a real one starts a new event, so the readers' order holds), the same track
 * twice in one instant, more values than one event takes, a new track in the middle, a slice
 * between two values of one instant, negative values; and fewer packets than values. */
typedef struct cb_value {
    const char *name;
    uint64_t ts_ps;
    double v;
} cb_value_t;

typedef struct cb_check {
    const cb_value_t *want;
    int n, got, bad, slices;
} cb_check_t;

static int check_cb(void *ctx, const trc_record_t *r)
{
    cb_check_t *c = ctx;
    if (r->kind == TRC_REC_SLICE)
        c->slices++;
    if (r->kind != TRC_REC_COUNTER)
        return 0;
    int k = c->got++;
    if (k >= c->n || strcmp(r->u.counter.name, c->want[k].name) != 0 ||
        r->u.counter.ts_ps != c->want[k].ts_ps || r->u.counter.value != c->want[k].v ||
        strcmp(r->u.counter.unit, "u") != 0 || r->u.counter.pid != 1)
        c->bad++;
    return 0;
}

static size_t count_packets(const unsigned char *b, size_t n)
{
    size_t packets = 0, i = 0;
    while (i < n) {
        i++; /* the tag */
        uint64_t len = 0;
        for (int shift = 0; i < n; shift += 7) {
            unsigned char c = b[i++];
            len |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80))
                break;
        }
        i += (size_t)len;
        packets++;
    }
    return packets;
}

static void test_pftrace_counter_values(void **state)
{
    (void)state;
    static const cb_value_t vals[] = {
        {"a", 1000, 1},        {"b", 1000, 2},          {"c", 1000, 3},       /* whole */
        {"a", 2000, 0.5},      {"b", 2000, 1.25},       {"c", 2000, 2.125},   /* reals */
        {"a", 3000, 7},        {"b", 3000, 0.75},       {"c", 3000, 9},       /* whole after real */
        {"a", 4000, 1},        {"a", 4000, 2},          {"b", 4000, 3},       /* a twice */
        {"a", 5000, 1},        {"b", 5000, 2},          {"c", 5000, 3},
        {"d", 5000, 4},        {"e", 5000, 5},          {"f", 5000, 6},       /* > 4, new tracks */
        {"a", 6000, -3},       {"b", 6000, -1e12},      {"c", 6000, 1e15},    /* negative, big */
        {"a", 7000, 4},        {"b", 7500, 5},          {"c", 7999, 6},       /* one ns: 7 */
        {"a", 9000, 1},        {"b", 9000, 2},                                /* a slice between */
        {"c", 9000, 3},        {"a", 10000, 0.1},       {"d", 10000, 0.2},
    };
    enum { NV = sizeof vals / sizeof vals[0] };
    /* counters take whole nanoseconds; 7500 and 7999 ps read back as 7000 */
    cb_value_t want[NV];
    for (int i = 0; i < NV; i++) {
        want[i] = vals[i];
        want[i].ts_ps = vals[i].ts_ps / 1000 * 1000;
    }
    const char *path = tu_join(dir, "counter_values.pftrace");
    trc_writer_t *w = open_pftrace_core0(path);
    char err[512];
    trc_record_t r;
    write_pe_track(w);
    for (int i = 0; i < NV; i++) {
        if (i == 26) {
            memset(&r, 0, sizeof r);
            r.kind = TRC_REC_SLICE;
            r.u.slice.kind = TRC_SLICE_INSTR;
            r.u.slice.pid = 1;
            r.u.slice.tid = trc_tid(1, TRC_TRACK_ENGINE, 0);
            r.u.slice.ts_ps = 9000;
            r.u.slice.dur_ps = 10;
            r.u.slice.name = "nop";
            assert_int_equal(trc_write(w, &r), NCSIM_OK);
        }
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_COUNTER;
        r.u.counter = (trc_counter_t){1, vals[i].name, "u", vals[i].ts_ps, vals[i].v, 1};
        assert_int_equal(trc_write(w, &r), NCSIM_OK);
    }
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
    cb_check_t c = {want, NV, 0, 0, 0};
    assert_int_equal(trc_read(path, check_cb, &c, err, sizeof err), NCSIM_OK);
    assert_int_equal(c.got, NV);
    assert_int_equal(c.bad, 0);
    assert_int_equal(c.slices, 1);
    /* one event per value (the writer sends no extra counters: traces.md, "Format details"),
     * plus the process, the track, the 6 counter tracks, the slice's begin and end */
    size_t len;
    char *bytes = tu_read_file(path, &len);
    assert_non_null(bytes);
    assert_int_equal(count_packets((const unsigned char *)bytes, len), 1 + 1 + 6 + 2 + NV);
    free(bytes);
}

/* Extra counters as other writers may send them: packed (one length-delimited field per list),
 * on a track that is not a counter (left out), a track without its value (left out),
 * truncated lists (nothing read from them). Made by hand (see the fuzz corpus file
 * extra_counters_packed.pftrace, the same bytes). */
static void test_pftrace_extra_counters_packed(void **state)
{
    (void)state;
    static const unsigned char bytes[] = {
        0x0a, 0x19, 0xe2, 0x03, 0x16, 0x08, 0xe8, 0x07, 0x1a, 0x11, 0x08, 0x01, 0x32, 0x0d, 0x63, 0x68, 
        0x69, 0x70, 0x20, 0x30, 0x20, 0x63, 0x6f, 0x72, 0x65, 0x20, 0x30, 0x0a, 0x14, 0xe2, 0x03, 0x11, 
        0x08, 0x02, 0x28, 0xe8, 0x07, 0x12, 0x05, 0x61, 0x20, 0x28, 0x75, 0x29, 0x42, 0x03, 0x32, 0x01, 
        0x75, 0x0a, 0x14, 0xe2, 0x03, 0x11, 0x08, 0x03, 0x28, 0xe8, 0x07, 0x12, 0x05, 0x62, 0x20, 0x28, 
        0x75, 0x29, 0x42, 0x03, 0x32, 0x01, 0x75, 0x0a, 0x14, 0xe2, 0x03, 0x11, 0x08, 0x04, 0x28, 0xe8, 
        0x07, 0x12, 0x05, 0x63, 0x20, 0x28, 0x75, 0x29, 0x42, 0x03, 0x32, 0x01, 0x75, 0x0a, 0x14, 0xe2, 
        0x03, 0x11, 0x08, 0x05, 0x28, 0xe8, 0x07, 0x12, 0x05, 0x64, 0x20, 0x28, 0x75, 0x29, 0x42, 0x03, 
        0x32, 0x01, 0x75, 0x0a, 0x2e, 0x40, 0x05, 0x50, 0x01, 0x5a, 0x28, 0x48, 0x04, 0x58, 0x02, 0xf0, 
        0x01, 0x01, 0xfa, 0x01, 0x02, 0x03, 0x04, 0x62, 0x0b, 0x07, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 
        0xff, 0xff, 0xff, 0x01, 0xea, 0x02, 0x01, 0x05, 0xf2, 0x02, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 
        0x00, 0xd0, 0x3f, 0x0a, 0x18, 0x40, 0x06, 0x50, 0x01, 0x5a, 0x12, 0x48, 0x04, 0x58, 0x02, 0xf0, 
        0x01, 0x02, 0xf8, 0x01, 0xe8, 0x07, 0xf8, 0x01, 0x03, 0x60, 0x09, 0x60, 0x0a, 0x0a, 0x1d, 0x40, 
        0x07, 0x50, 0x01, 0x5a, 0x17, 0x48, 0x04, 0x58, 0x02, 0xf0, 0x01, 0x03, 0xea, 0x02, 0x01, 0x05, 
        0xf2, 0x02, 0x02, 0x00, 0x01, 0xfa, 0x01, 0x01, 0x03, 0x62, 0x01, 0x80};
    static const cb_value_t want[] = {
        {"a", 5000, 1}, {"b", 5000, 7}, {"c", 5000, -2}, {"d", 5000, 0.25},
        {"a", 6000, 2}, {"b", 6000, 10}, {"a", 7000, 3},
    };
    const char *path = tu_join(dir, "extra_packed.pftrace");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, sizeof bytes, f), sizeof bytes);
    assert_int_equal(fclose(f), 0);
    cb_check_t c = {want, (int)(sizeof want / sizeof want[0]), 0, 0, 0};
    char err[512];
    assert_int_equal(trc_read(path, check_cb, &c, err, sizeof err), NCSIM_OK);
    assert_int_equal(c.got, c.n);
    assert_int_equal(c.bad, 0);
}

/* Small events (counter values, slice ends, flow instants) are written in place after their
 * packet's header, or composed apart when interned strings go first (a flow or slice with a
 * new name): both paths alternate here and every value reads back exactly, timestamps of one
 * to seven varint bytes, negative (ten-byte) and real counter values included. */
enum { SMALL_N = 300 };
typedef struct small_check {
    int counters, slices, flows, bad;
} small_check_t;

static double small_value(int k)
{
    return k % 5 == 0 ? -(double)k : k % 2 ? k * 1000.0 + 0.5 : (double)k * 1e6;
}

static uint64_t small_ts(int k)
{
    return (uint64_t)k * (k % 7 == 0 ? 1000000000000ull : 1000) + (uint64_t)(k % 4) * 250;
}

static int check_small(void *ctx, const trc_record_t *r)
{
    small_check_t *c = ctx;
    if (r->kind == TRC_REC_COUNTER) {
        int k = c->counters++;
        if (r->u.counter.value != small_value(k) || r->u.counter.ts_ps != small_ts(k) * 1000)
            c->bad++;
    } else if (r->kind == TRC_REC_SLICE) {
        int k = c->slices++;
        if (r->u.slice.ts_ps != small_ts(k) * 1000 + 5 || r->u.slice.dur_ps != 3 + (uint64_t)k)
            c->bad++;
        char want[16];
        snprintf(want, sizeof want, "op%d", k % 3 == 0 ? k : -1);
        if (strcmp(r->u.slice.name, want) != 0)
            c->bad++;
    } else if (r->kind == TRC_REC_FLOW) {
        c->flows++;
        if (r->u.flow.to_ts_ps != r->u.flow.from_ts_ps + 7 || r->u.flow.id == 0)
            c->bad++;
    }
    return 0;
}

static void test_pftrace_small_events(void **state)
{
    (void)state;
    const char *path = tu_join(dir, "small.pftrace");
    trc_writer_t *w = open_pftrace_core0(path);
    char err[512];
    trc_record_t r;
    uint32_t tid = trc_tid(1, TRC_TRACK_ENGINE, 0), tid2 = trc_tid(1, TRC_TRACK_ENGINE, 1);
    for (int t = 0; t < 2; t++) {
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_TRACK;
        r.u.track.pid = 1;
        r.u.track.tid = t ? tid2 : tid;
        r.u.track.name = t ? "act" : "pe";
        assert_int_equal(trc_write(w, &r), NCSIM_OK);
    }
    static char names[SMALL_N][16], fnames[SMALL_N][16];
    for (int k = 0; k < SMALL_N; k++) {
        uint64_t ts = small_ts(k) * 1000; /* counters: whole nanoseconds */
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_COUNTER;
        r.u.counter = (trc_counter_t){1, "HBM bandwidth", "GB/s", ts, small_value(k), 1};
        assert_int_equal(trc_write(w, &r), NCSIM_OK);
        /* a new name every third slice: its begin sends it, its end goes in place */
        snprintf(names[k], sizeof names[k], "op%d", k % 3 == 0 ? k : -1);
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_SLICE;
        r.u.slice.kind = TRC_SLICE_INSTR;
        r.u.slice.pid = 1;
        r.u.slice.tid = tid;
        r.u.slice.ts_ps = ts + 5;
        r.u.slice.dur_ps = 3 + (uint64_t)k;
        r.u.slice.a.instr.ii = r.u.slice.dur_ps;
        r.u.slice.name = names[k];
        assert_int_equal(trc_write(w, &r), NCSIM_OK);
        /* a flow to the other track, ending on an instant of its own; a new name every
         * other one (its instant takes the path that sends interned strings first) */
        snprintf(fnames[k], sizeof fnames[k], "f%d", k % 2 ? k : -1);
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_FLOW;
        r.u.flow = (trc_flow_t){(uint64_t)k + 1, "semaphore", fnames[k], 1, tid, ts + 5,
                                1, tid2, ts + 12, 1};
        assert_int_equal(trc_write(w, &r), NCSIM_OK);
    }
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
    small_check_t c;
    memset(&c, 0, sizeof c);
    assert_int_equal(trc_read(path, check_small, &c, err, sizeof err), NCSIM_OK);
    assert_int_equal(c.counters, SMALL_N);
    assert_int_equal(c.slices, SMALL_N);
    assert_int_equal(c.flows, SMALL_N);
    assert_int_equal(c.bad, 0);
}

static int has_bytes(const char *b, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(b + i, s, k) == 0)
            return 1;
    return 0;
}

/* Stable records (strings known by address) give the same bytes as the others, in every
 * format: escaped strings, templates whose numbers run short, a string seen twice. */
static void write_all(const char *path, trc_format_t fmt, const collected_t *in, int stable)
{
    trc_writer_t *w;
    char err[512];
    assert_int_equal(trc_writer_open(path, fmt, &w, err, sizeof err), NCSIM_OK);
    for (int i = 0; i < in->n; i++) {
        trc_record_t r = in->r[i];
        if (r.kind == TRC_REC_SLICE)
            r.u.slice.stable = (uint8_t)stable;
        else if (r.kind == TRC_REC_COUNTER)
            r.u.counter.stable = (uint8_t)stable;
        else if (r.kind == TRC_REC_FLOW)
            r.u.flow.stable = (uint8_t)stable;
        assert_int_equal(trc_write(w, &r), NCSIM_OK);
    }
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
}

static void test_stable_same_bytes(void **state)
{
    (void)state;
    collected_t *in = calloc(1, sizeof *in);
    assert_non_null(in);
    build_records(in);
    /* operands as templates: numbers for every '#', fewer numbers than '#', one number */
    static const char *const tmpl[] = {"xs[:, 1], x | wait a >= # | post b += #",
                                       "y, z | wait 7 == # | wait c >= # | post d -= #",
                                       "t | wait e >= #"};
    static const char *const vals[] = {"-2 5", "12", "0"};
    for (int k = 0; k < 6; k++) {
        trc_record_t r;
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_SLICE;
        r.u.slice.kind = TRC_SLICE_INSTR;
        r.u.slice.pid = 1;
        r.u.slice.tid = trc_tid(1, TRC_TRACK_ENGINE, 0);
        r.u.slice.ts_ps = 5000000 + 1000 * (uint64_t)k;
        r.u.slice.dur_ps = 500;
        r.u.slice.name = "activate";
        r.u.slice.a.instr.operands = tmpl[k % 3]; /* each twice: the second by address */
        r.u.slice.operands_tmpl = tmpl[k % 3];
        r.u.slice.operand_values = vals[k % 3];
        r.u.slice.a.instr.cost = "II = \"quoted\"\tand tabbed";
        r.u.slice.a.instr.ii = 500;
        assert_true(in->n < MAXREC);
        in->r[in->n++] = r; /* not through keep(): the template must stay this pointer */
    }
    static const char *const names[] = {"s0.json", "s1.json", "s0.pftrace", "s1.pftrace"};
    for (int f = 0; f < 2; f++) {
        trc_format_t fmt = f ? TRC_FORMAT_PFTRACE : TRC_FORMAT_JSON;
        write_all(tu_join(dir, names[2 * f]), fmt, in, 0);
        write_all(tu_join(dir, names[2 * f + 1]), fmt, in, 1);
        size_t n0, n1;
        char *b0 = tu_read_file(tu_join(dir, names[2 * f]), &n0);
        char *b1 = tu_read_file(tu_join(dir, names[2 * f + 1]), &n1);
        assert_non_null(b0);
        assert_non_null(b1);
        assert_int_equal(n0, n1);
        assert_memory_equal(b0, b1, n0);
        if (!f) {
            assert_true(has_bytes(b0, n0, "\"xs[:, 1], x | wait a >= -2 | post b += 5\""));
            assert_true(has_bytes(b0, n0, "\"y, z | wait 7 == 12 | wait c >= # | post d -= #\""));
            assert_true(has_bytes(b0, n0, "II = \\\"quoted\\\"\\u0009and tabbed"));
        }
        free(b0);
        free(b1);
    }
    free(in);
}

static void test_roundtrip_json(void **state)
{
    (void)state;
    roundtrip(TRC_FORMAT_JSON, "rt.json");
}

static void test_roundtrip_json_gz(void **state)
{
    (void)state;
    roundtrip(TRC_FORMAT_JSON_GZ, "rt.json.gz");
    /* it is gzip */
    size_t n;
    char *b = tu_read_file(tu_join(dir, "rt.json.gz"), &n);
    assert_non_null(b);
    assert_true(n > 2 && (unsigned char)b[0] == 0x1f && (unsigned char)b[1] == 0x8b);
    free(b);
}

static void test_roundtrip_pftrace(void **state)
{
    (void)state;
    roundtrip(TRC_FORMAT_PFTRACE, "rt.pftrace");
    /* reals that are n / 1000 or n / 10^6 went as varints under their scaled names (and read
     * back exactly above); one that is neither went as a double */
    size_t n;
    char *b = tu_read_file(tu_join(dir, "rt.pftrace"), &n);
    assert_non_null(b);
    assert_true(has_bytes(b, n, "cap_gbps_x1000"));
    assert_true(has_bytes(b, n, "efficiency_x1e6"));
    assert_false(has_bytes(b, n, "gbps_x1e6"));
    free(b);
}

static int stop_after_two(void *ctx, const trc_record_t *r)
{
    (void)r;
    return ++*(int *)ctx == 2;
}

static int count_records(void *ctx, const trc_record_t *r)
{
    (void)r;
    ++*(int *)ctx;
    return 0;
}

static void test_reader_errors(void **state)
{
    (void)state;
    char err[512];
    int n = 0;
    assert_int_equal(trc_read(tu_join(dir, "missing.json"), collect, NULL, err, sizeof err),
                     NCSIM_IO);
    assert_non_null(strstr(err, "missing.json"));
    const char *bad = tu_join(dir, "bad.json");
    tu_write_file(bad, "{\"traceEvents\":[{\"ph\":\"X\",", 26);
    assert_int_equal(trc_read(bad, stop_after_two, &n, err, sizeof err), NCSIM_FORMAT);
    assert_non_null(strstr(err, "not valid JSON"));
    tu_write_file(bad, "hello", 5);
    assert_int_equal(trc_read(bad, stop_after_two, &n, err, sizeof err), NCSIM_FORMAT);
    const char *x = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"instr\",\"name\":\"a\",\"pid\":1}]}";
    tu_write_file(bad, x, strlen(x));
    assert_int_equal(trc_read(bad, stop_after_two, &n, err, sizeof err), NCSIM_FORMAT);
    assert_non_null(strstr(err, "without a valid pid, tid, ts or dur"));
    /* a truncated .pftrace */
    roundtrip(TRC_FORMAT_PFTRACE, "cut.pftrace");
    size_t len;
    char *b = tu_read_file(tu_join(dir, "cut.pftrace"), &len);
    assert_non_null(b);
    tu_write_file(tu_join(dir, "cut.pftrace"), b, len - 3);
    free(b);
    assert_int_equal(trc_read(tu_join(dir, "cut.pftrace"), count_records, &n, err, sizeof err),
                     NCSIM_FORMAT);
    assert_non_null(strstr(err, "truncated"));
    /* a callback may stop early */
    n = 0;
    assert_int_equal(trc_read(tu_join(dir, "rt.json"), stop_after_two, &n, err, sizeof err),
                     NCSIM_OK);
    assert_int_equal(n, 2);
}

/* ---- the checker must be able to fail ------------------------------------------------------------ */

static void expect_checker_fails(const char *json, const char *what)
{
    const char *p = tu_join(dir, "broken.json");
    tu_write_file(p, json, strlen(json));
    char msg[1024];
    assert_int_equal(tc_check_json(p, NULL, msg, sizeof msg), -1);
    if (!strstr(msg, what))
        fprintf(stderr, "checker said: %s (expected '%s')\n", msg, what);
    assert_non_null(strstr(msg, what));
}

#define META "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"p\"}},"   \
             "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"t\"}}"

static void test_checker_catches(void **state)
{
    (void)state;
    /* a good one first */
    const char *good = "{\"traceEvents\":[" META
                       ",{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":2,\"name\":\"a\"},"
                       "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":1.5,\"dur\":0.5,\"name\":\"b\"},"
                       "{\"ph\":\"s\",\"cat\":\"c\",\"id\":1,\"pid\":1,\"tid\":2,\"ts\":1},"
                       "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"c\",\"id\":1,\"pid\":1,\"tid\":2,"
                       "\"ts\":1.5},"
                       "{\"ph\":\"C\",\"name\":\"n\",\"pid\":1,\"ts\":1,\"args\":{\"v\":3}}]}";
    const char *p = tu_join(dir, "good.json");
    tu_write_file(p, good, strlen(good));
    tc_stats_t st;
    assert_checker_ok(p, &st);
    assert_true(st.slices == 2 && st.flows == 1 && st.counters == 1);

    expect_checker_fails("{\"traceEvents\":[" META ",{\"ph\":\"X\",", "well-formed");
    expect_checker_fails("{\"traceEvents\":[" META
                         ",{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":2},"
                         "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":2,\"dur\":2}]}",
                         "overlap partially");
    expect_checker_fails("{\"traceEvents\":[" META
                         ",{\"ph\":\"X\",\"pid\":1,\"tid\":3,\"ts\":1,\"dur\":2}]}",
                         "no thread_name");
    expect_checker_fails("{\"traceEvents\":[" META
                         ",{\"ph\":\"X\",\"pid\":7,\"tid\":2,\"ts\":1,\"dur\":2}]}",
                         "no process_name");
    expect_checker_fails("{\"traceEvents\":[" META
                         ",{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":2},"
                         "{\"ph\":\"s\",\"cat\":\"c\",\"id\":1,\"pid\":1,\"tid\":2,\"ts\":1}]}",
                         "not one s and one f");
    expect_checker_fails("{\"traceEvents\":[" META
                         ",{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":2},"
                         "{\"ph\":\"s\",\"cat\":\"c\",\"id\":1,\"pid\":1,\"tid\":2,\"ts\":1},"
                         "{\"ph\":\"f\",\"cat\":\"c\",\"id\":1,\"pid\":1,\"tid\":2,\"ts\":9}]}",
                         "outside any slice");
    expect_checker_fails("{\"traceEvents\":[" META
                         ",{\"ph\":\"C\",\"name\":\"n\",\"pid\":1,\"ts\":1,"
                         "\"args\":{\"v\":\"3\"}}]}",
                         "non-numeric");
    expect_checker_fails("{\"traceEvents\":[" META
                         ",{\"ph\":\"X\",\"pid\":\"1\",\"tid\":2,\"ts\":1,\"dur\":2}]}",
                         "not a plain number");
    expect_checker_fails("{\"other\":[]}", "no \"traceEvents\"");
}

/* ---- ncsim run --trace ------------------------------------------------------------------------------ */

static int ncsim(const char *args, char **out)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", dir, tu_ncsim(), args);
    return tu_run(cmd, out);
}

static char *read_all(const char *path)
{
    char *b = tu_read_file(path, NULL);
    assert_non_null(b);
    return b;
}

static const char *demo(void)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s", tu_source_path("kernels/demo_gemm.nca"));
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* Is there a line holding both a and b? */
static int line_with(const char *text, const char *a, const char *b)
{
    for (const char *p = text; (p = strstr(p, a)) != NULL; p++) {
        const char *eol = strchr(p, '\n');
        const char *q = strstr(p, b);
        if (q && (!eol || q < eol))
            return 1;
    }
    return 0;
}

static void test_run_json(void **state)
{
    (void)state;
    char args[2048], *out = NULL;
    snprintf(args, sizeof args, "run %s --timing-only -q --trace demo.json", demo());
    assert_int_equal(ncsim(args, &out), 0);
    free(out);
    tc_stats_t st;
    assert_checker_ok(tu_join(dir, "demo.json"), &st);
    char *t = read_all(tu_join(dir, "demo.json"));
    /* one process per core, named by chip and core; engine and queue tracks */
    assert_non_null(strstr(t, "\"name\":\"chip 0 core 0\""));
    assert_non_null(strstr(t, "\"name\":\"chip 0 core 1\""));
    assert_non_null(strstr(t, "\"name\":\"chip 0\""));
    assert_non_null(strstr(t, "\"thread_name\",\"pid\":1,\"tid\":1001,\"args\":{\"name\":\"pe\"}"));
    assert_non_null(strstr(t, "\"args\":{\"name\":\"dma q9\"}"));
    /* 2 cores x 114 instructions, 2 x 44 transfers */
    assert_int_equal(count(t, "\"cat\":\"instr\""), 228);
    assert_int_equal(count(t, "\"ph\":\"X\",\"cat\":\"dma\""), 88);
    /* instruction args: line, operands, II, latency, FLOPs, stall cause */
    assert_non_null(strstr(t, "\"name\":\"matmul\""));
    assert_non_null(strstr(t, "\"ii_ns\":182.857,\"latency_ns\":307.857"));
    assert_non_null(strstr(t, "\"flops\":16777216"));
    assert_non_null(strstr(t, "\"stall\":\"semaphore b_ready\""));
    assert_non_null(strstr(t, "\"wait_semaphore_ns\":"));
    /* flows: post -> wait and issue -> transfer, all paired (checked above) */
    assert_true(count(t, "\"ph\":\"s\",\"cat\":\"semaphore\"") > 20);
    assert_int_equal(count(t, "\"ph\":\"s\",\"cat\":\"dma\""), 88);
    /* counters */
    assert_non_null(strstr(t, "\"name\":\"HBM bandwidth\",\"pid\":10001"));
    assert_non_null(strstr(t, "\"name\":\"DMA in flight\""));
    assert_non_null(strstr(t, "\"name\":\"DMA bandwidth\""));
    assert_non_null(strstr(t, "\"name\":\"SBUF in use\""));
    assert_non_null(strstr(t, "\"name\":\"PSUM in use\""));
    assert_non_null(strstr(t, "\"name\":\"semaphore mm_done\""));
    /* every declared tensor is touched in the end: a 256 KiB + b 2 MiB + out 512 KiB of
     * SBUF, acc 512 KiB of PSUM */
    assert_non_null(strstr(t, "\"name\":\"SBUF in use\",\"pid\":1,\"ts\":"));
    assert_non_null(strstr(t, "{\"bytes\":2883584}"));
    assert_true(line_with(t, "\"name\":\"PSUM in use\",\"pid\":1,", "{\"bytes\":524288}"));
    assert_non_null(strstr(t, "\"name\":\"PSUM in use\",\"pid\":2"));
    /* the DMA-in-flight counter returns to zero */
    assert_non_null(strstr(t, "\"name\":\"DMA in flight\",\"pid\":2"));
    assert_true(st.flows > 100);
    free(t);
}

/* The stats and the trace agree (busy, stall) and the same run traced three ways reports
 * the same figures. */
static void test_formats_agree(void **state)
{
    (void)state;
    char args[6144], *a = NULL, *b = NULL, *c = NULL;
    snprintf(args, sizeof args,
             "run %s --timing-only -q --trace d1.pftrace && %s run %s --timing-only -q "
             "--trace d1.json.gz && %s run %s --timing-only -q --trace d1.json",
             demo(), tu_ncsim(), demo(), tu_ncsim(), demo());
    assert_int_equal(ncsim(args, NULL), 0);
    assert_checker_ok(tu_join(dir, "d1.json.gz"), NULL);
    assert_int_equal(ncsim("report d1.json --json", &a), 0);
    assert_int_equal(ncsim("report d1.json.gz --json", &b), 0);
    assert_int_equal(ncsim("report d1.pftrace --json", &c), 0);
    /* identical but for the source line */
    char *na = strchr(a, '\n'), *nb = strchr(b, '\n'), *nc = strchr(c, '\n');
    na = strchr(na + 1, '\n');
    nb = strchr(nb + 1, '\n');
    nc = strchr(nc + 1, '\n');
    assert_string_equal(na, nb);
    assert_string_equal(na, nc);
    free(a);
    free(b);
    free(c);
}

/* Every record as one line of text (counters at whole nanoseconds, as .pftrace keeps them). */
typedef struct dump {
    char *p;
    size_t n, cap;
} dump_t;

static void dump_add(dump_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dump_add(dump_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(k >= 0);
    if (d->n + (size_t)k + 1 > d->cap) {
        d->cap = (d->n + (size_t)k + 1) * 2;
        d->p = realloc(d->p, d->cap);
        assert_non_null(d->p);
    }
    va_start(ap, fmt);
    vsnprintf(d->p + d->n, d->cap - d->n, fmt, ap);
    va_end(ap);
    d->n += (size_t)k;
}

static int dump_record(void *ctx, const trc_record_t *r)
{
    dump_t *d = ctx;
    if (r->kind == TRC_REC_COUNTER) {
        dump_add(d, "counter %u %s %s %llu %.17g\n", r->u.counter.pid, r->u.counter.name,
                 r->u.counter.unit, (unsigned long long)(r->u.counter.ts_ps / 1000),
                 r->u.counter.value);
    } else if (r->kind == TRC_REC_FLOW) {
        dump_add(d, "flow %s %s %u %llu %u %llu\n", r->u.flow.cat, r->u.flow.name,
                 r->u.flow.from_tid, (unsigned long long)r->u.flow.from_ts_ps, r->u.flow.to_tid,
                 (unsigned long long)r->u.flow.to_ts_ps);
    } else if (r->kind == TRC_REC_SLICE) {
        const trc_slice_t *s = &r->u.slice;
        dump_add(d, "slice %d %u %llu %llu %s", s->kind, s->tid, (unsigned long long)s->ts_ps,
                 (unsigned long long)s->dur_ps, s->name);
        unsigned nf;
        const trc_field_t *f = trc_slice_fields((trc_slice_kind_t)s->kind, &nf);
        for (unsigned i = 0; i < nf; i++) {
            const unsigned char *m = (const unsigned char *)&s->a + f[i].offset;
            if (f[i].type == TRC_FT_STR) {
                const char *x;
                memcpy(&x, m, sizeof x);
                dump_add(d, " %s=[%s]", f[i].key, x ? x : "");
            } else if (f[i].type == TRC_FT_F64) {
                double v;
                memcpy(&v, m, sizeof v);
                dump_add(d, " %s=%.17g", f[i].key, v);
            } else {
                uint64_t v;
                memcpy(&v, m, sizeof v);
                dump_add(d, " %s=%llu", f[i].key, (unsigned long long)v);
            }
        }
        dump_add(d, "\n");
    } else {
        dump_add(d, "%s\n", trc_record_kind_name((trc_kind_t)r->kind));
    }
    return 0;
}

static char *dump_trace(const char *name)
{
    dump_t d = {NULL, 0, 0};
    char err[512];
    assert_int_equal(trc_read(tu_join(dir, name), dump_record, &d, err, sizeof err), NCSIM_OK);
    assert_non_null(d.p);
    return d.p;
}

/* The three formats of one run hold the same records, field for field: operands (sent as a
 * template and its clause numbers in .pftrace, negative ones included), times in picoseconds,
 * transfers' breakdowns rebuilt from their numbers. */
static void test_formats_same_records(void **state)
{
    (void)state;
    static const char prog[] =
        ".hbm x bf16 [1024, 128] input\n.hbm y fp32 [1024, 128] output\n.core 0\n"
        ".sbuf w bf16 [128, 128]\n.sbuf xs bf16 [128, 4, 128]\n.sbuf ys fp32 [128, 4, 128]\n"
        ".psum acc fp32 [128, 4, 128]\n.sem wl\n.sem loaded\n.sem mm\n.sem act_done\n"
        ".sem stored\n.engine sp\ndma w, x[0:128], queue=15 | post wl\n"
        ".loop i = 0, 10\n"
        "    .if i < 8\n"
        "        dma xs[:, i % 4, :], x[i * 128:i * 128 + 128], queue=i % 4 "
        "| wait act_done >= i - 3 | post loaded\n"
        "    .endif\n"
        "    .if i >= 2\n"
        "        dma y[(i - 2) * 128:(i - 1) * 128], ys[:, (i - 2) % 4, :], queue=8 "
        "| wait act_done >= i - 1 | post stored += 2\n"
        "    .endif\n"
        ".endloop\n.engine pe\nldweights w | wait wl == 1\n"
        ".loop i = 0, 8\n"
        "    matmul acc[:, i % 4, :], xs[:, i % 4, :] | wait loaded >= i + 1 | post mm\n"
        ".endloop\n.engine act\n"
        ".loop i = 0, 8\n"
        "    activate ys[:, i % 4, :], acc[:, i % 4, :], gelu | wait mm >= i + 1 "
        "| wait stored >= 2 * i - 6 | post act_done\n"
        ".endloop\n";
    assert_int_equal(tu_write_file(tu_join(dir, "same.nca"), prog, strlen(prog)), 0);
    const char *names[] = {"same.json", "same.json.gz", "same.pftrace"};
    char *dumps[3];
    for (int k = 0; k < 3; k++) {
        char args[256];
        snprintf(args, sizeof args, "run same.nca --timing-only -q --trace %s", names[k]);
        assert_int_equal(ncsim(args, NULL), 0);
        dumps[k] = dump_trace(names[k]);
    }
    /* the run has what the encodings special-case */
    assert_non_null(strstr(dumps[0], ">= -3 | post loaded]"));
    assert_non_null(strstr(dumps[0], "| post stored += 2]"));
    assert_non_null(strstr(dumps[0], "cost=[fixed "));
    assert_string_equal(dumps[0], dumps[1]);
    assert_string_equal(dumps[0], dumps[2]);
    for (int k = 0; k < 3; k++)
        free(dumps[k]);
}

typedef struct window_check {
    uint64_t start, end;
    int slices, outside, act;
} window_check_t;

static int check_window(void *ctx, const trc_record_t *r)
{
    window_check_t *w = ctx;
    if (r->kind != TRC_REC_SLICE)
        return 0;
    w->slices++;
    const trc_slice_t *s = &r->u.slice;
    if (s->ts_ps + s->dur_ps < w->start || s->ts_ps > w->end)
        w->outside++;
    uint32_t n;
    if (trc_track_kind_of_tid(s->tid, &n) == TRC_TRACK_ENGINE && n != 0)
        w->act++; /* only pe (engine 0) was asked for */
    return 0;
}

static void test_filters(void **state)
{
    (void)state;
    char args[2048], *out = NULL;
    snprintf(args, sizeof args,
             "run %s --timing-only -q --trace win.json --trace-start 15000 --trace-end 19000 "
             "--trace-engines pe,dma",
             demo());
    assert_int_equal(ncsim(args, &out), 0);
    free(out);
    assert_checker_ok(tu_join(dir, "win.json"), NULL);
    char *t = read_all(tu_join(dir, "win.json"));
    assert_null(strstr(t, "\"name\":\"act\""));
    assert_null(strstr(t, "\"name\":\"activate\""));
    assert_non_null(strstr(t, "\"name\":\"matmul\""));
    assert_non_null(strstr(t, "\"trace_start_ns\":15000,\"trace_end_ns\":19000"));
    assert_non_null(strstr(t, "\"trace_engines\":\"pe,dma\""));
    free(t);
    char err[512];
    window_check_t w = {15000000, 19000000, 0, 0, 0};
    assert_int_equal(trc_read(tu_join(dir, "win.json"), check_window, &w, err, sizeof err),
                     NCSIM_OK);
    assert_true(w.slices > 10);
    assert_int_equal(w.outside, 0);
    assert_int_equal(w.act, 0);
    /* the full trace has many more */
    window_check_t all = {0, UINT64_MAX, 0, 0, 0};
    assert_int_equal(trc_read(tu_join(dir, "demo.json"), check_window, &all, err, sizeof err),
                     NCSIM_OK);
    assert_true(all.slices > w.slices);
    assert_true(all.act > 0);
    /* the report says the trace is partial */
    assert_int_equal(ncsim("report win.json", &out), 0);
    assert_non_null(strstr(out, "the trace holds part of the run"));
    free(out);
    /* the same filter in .pftrace */
    snprintf(args, sizeof args,
             "run %s --timing-only -q --trace win.pftrace --trace-start 15000 --trace-end 19000 "
             "--trace-engines pe,dma",
             demo());
    assert_int_equal(ncsim(args, NULL), 0);
    window_check_t wp = {15000000, 19000000, 0, 0, 0};
    assert_int_equal(trc_read(tu_join(dir, "win.pftrace"), check_window, &wp, err, sizeof err),
                     NCSIM_OK);
    assert_int_equal(wp.slices, w.slices);
    assert_int_equal(wp.outside, 0);
}

static void same_bytes(const char *a, const char *b)
{
    size_t na, nb;
    char *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    assert_non_null(x);
    assert_non_null(y);
    assert_true(na == nb);
    assert_memory_equal(x, y, na);
    free(x);
    free(y);
}

static void test_deterministic(void **state)
{
    (void)state;
    static const char *const ext[] = {"json", "json.gz", "pftrace"};
    for (int i = 0; i < 3; i++) {
        char args[3072];
        snprintf(args, sizeof args,
                 "run %s --random-inputs 3 -q --trace det1.%s && %s run %s --random-inputs 3 "
                 "-q --trace det2.%s",
                 demo(), ext[i], tu_ncsim(), demo(), ext[i]);
        assert_int_equal(ncsim(args, NULL), 0);
        char a[64], b[64];
        snprintf(a, sizeof a, "det1.%s", ext[i]);
        snprintf(b, sizeof b, "det2.%s", ext[i]);
        same_bytes(tu_join(dir, a), tu_join(dir, b));
    }
}

/* A .json.gz is one standard gzip member holding exactly the .json's bytes, checked by
 * Python's zlib (not our reader), on a trace of many writer buffers (a 2,000-iteration loop:
 * a few MB of JSON, so the compressor is fed many times before it finishes). */
static void test_json_gz_is_plain_gzip(void **state)
{
    (void)state;
    const char *nca = ".sbuf a fp32 [128, 2, 64]\n.sem s\n.engine dve\n"
                      ".loop i = 0, 2000\n"
                      "    tensor_copy a[:, i % 2, :], a[:, 1 - i % 2, :] | post s\n"
                      ".endloop\n";
    assert_int_equal(tu_write_file(tu_join(dir, "gzloop.nca"), nca, strlen(nca)), 0);
    char args[2048];
    snprintf(args, sizeof args,
             "run gzloop.nca --timing-only -q --trace gz1.json.gz && %s run gzloop.nca "
             "--timing-only -q --trace gz1.json",
             tu_ncsim());
    assert_int_equal(ncsim(args, NULL), 0);
    static const char check_py[] =
        "import sys, zlib\n"
        "gz = open(sys.argv[1], 'rb').read(); plain = open(sys.argv[2], 'rb').read()\n"
        "d = zlib.decompressobj(31)\n"
        "out = d.decompress(gz) + d.flush()\n"
        "assert d.eof and not d.unused_data, 'not exactly one gzip member'\n"
        "assert len(plain) > 1 << 20, len(plain)\n"
        "assert out == plain, (len(out), len(plain))\n"
        "print('ok', len(plain), len(gz))\n";
    char pyargs[2048], *out = NULL;
    snprintf(pyargs, sizeof pyargs, "%s %s", tu_join(dir, "gz1.json.gz"), tu_join(dir, "gz1.json"));
    int rc = tu_python(check_py, pyargs, &out);
    if (rc != 0)
        fprintf(stderr, "%s\n", out ? out : "(no output)");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "ok "));
    free(out);
}

static void test_errors(void **state)
{
    (void)state;
    char args[2048], *out = NULL;
    snprintf(args, sizeof args, "run %s --timing-only -q --trace out.txt", demo());
    assert_int_equal(ncsim(args, &out), 2);
    assert_non_null(strstr(out, ".json, .json.gz or .pftrace"));
    free(out);
    snprintf(args, sizeof args, "run %s --timing-only -q --trace t.json --trace-engines pe,gpu",
             demo());
    assert_int_equal(ncsim(args, &out), 2);
    assert_non_null(strstr(out, "unknown engine 'gpu'"));
    free(out);
    snprintf(args, sizeof args, "run %s --timing-only -q --trace-start 5", demo());
    assert_int_equal(ncsim(args, &out), 2);
    assert_non_null(strstr(out, "need --trace FILE"));
    free(out);
    snprintf(args, sizeof args, "run %s --timing-only -q --trace t.json --trace-start x", demo());
    assert_int_equal(ncsim(args, &out), 2);
    free(out);
    snprintf(args, sizeof args,
             "run %s --timing-only -q --trace t.json --trace-start 10 --trace-end 5", demo());
    assert_int_equal(ncsim(args, &out), 2);
    assert_non_null(strstr(out, "later than --trace-start"));
    free(out);
    snprintf(args, sizeof args, "run %s --timing-only -q --trace /nonexistent/dir/t.json",
             demo());
    assert_int_equal(ncsim(args, &out), 3);
    assert_non_null(strstr(out, "--trace '/nonexistent/dir/t.json': directory '/nonexistent/dir' does not exist"));
    free(out);
}

/* ---- collectives and NeuronLinks ------------------------------------------------------------------ */

/* An all_reduce over 4 cores of 2 chips; core 3 arrives late (its cc waits for its dve), so
 * the others wait for it. */
static const char cc_prog[] = ".chips 2\n.group g = 0..3\n"
                              ".hbm x0 fp32 [64, 1024] scratch chip=0\n"
                              ".hbm x1 fp32 [64, 1024] scratch chip=1\n"
                              ".core 0\n.engine cc\nall_reduce x0, x0, op=add, group=g\n"
                              ".core 1\n.engine cc\nall_reduce x0, x0, op=add, group=g\n"
                              ".core 2\n.engine cc\nall_reduce x1, x1, op=add, group=g\n"
                              ".core 3\n.sbuf a fp32 [128, 512]\n.sem s\n"
                              ".engine dve\nmemset a, 1.0\nmemset a, 2.0 | post s\n"
                              ".engine cc\nall_reduce x1, x1, op=add, group=g | wait s >= 1\n";

typedef struct cc_count {
    int links, steps, instr, link_tracks;
    uint64_t link_bytes;
    int bad_step;
} cc_count_t;

static int count_cc(void *ctx, const trc_record_t *r)
{
    cc_count_t *c = ctx;
    if (r->kind == TRC_REC_TRACK &&
        trc_track_kind_of_tid(r->u.track.tid, NULL) == TRC_TRACK_LINK)
        c->link_tracks++;
    if (r->kind != TRC_REC_SLICE)
        return 0;
    const trc_slice_t *s = &r->u.slice;
    if (s->kind == TRC_SLICE_LINK) {
        c->links++;
        c->link_bytes += s->a.link.bytes;
        /* on a track of the sending chip's links process, between two different chips */
        if (trc_chip_of_pid(s->pid) != (int64_t)s->a.link.src_chip ||
            s->a.link.src_chip == s->a.link.dst_chip || !s->a.link.step ||
            s->a.link.collective_id != 1)
            c->bad_step++;
    } else if (s->kind == TRC_SLICE_COLLECTIVE) {
        c->steps++;
        const trc_collective_args_t *a = &s->a.collective;
        if (!a->step || a->step > a->nsteps || a->nsteps != 6 || a->members != 4 ||
            !a->bottleneck || !a->bottleneck[0] || strcmp(a->collective, "all_reduce") != 0 ||
            a->latency == 0 || a->latency > s->dur_ps)
            c->bad_step++;
    } else if (s->kind == TRC_SLICE_INSTR) {
        c->instr++;
    }
    return 0;
}

static void test_collective_trace(void **state)
{
    (void)state;
    tu_write_file(tu_join(dir, "cc.nca"), cc_prog, strlen(cc_prog));
    static const char *const ext[] = {"json", "json.gz", "pftrace"};
    cc_count_t counts[3];
    for (int i = 0; i < 3; i++) {
        char args[256];
        snprintf(args, sizeof args,
                 "run cc.nca --arch trn1-32xl --set cc.algorithm=ring --timing-only -q --trace "
                 "cc1.%s && %s run cc.nca --arch trn1-32xl --set cc.algorithm=ring --timing-only "
                 "-q --trace cc2.%s",
                 ext[i], tu_ncsim(), ext[i]);
        assert_int_equal(ncsim(args, NULL), 0);
        char a[64], b[64];
        snprintf(a, sizeof a, "cc1.%s", ext[i]);
        snprintf(b, sizeof b, "cc2.%s", ext[i]);
        same_bytes(tu_join(dir, a), tu_join(dir, b)); /* deterministic */
        if (i < 2)
            assert_checker_ok(tu_join(dir, a), NULL);
        char err[512];
        memset(&counts[i], 0, sizeof counts[i]);
        assert_int_equal(trc_read(tu_join(dir, a), count_cc, &counts[i], err, sizeof err),
                         NCSIM_OK);
        /* ring all_reduce of 4 members: 6 steps; per step one chunk crosses each direction of
         * the 0<->1 link, each member has a step slice */
        assert_int_equal(counts[i].links, 12);
        assert_int_equal(counts[i].steps, 24);
        assert_int_equal(counts[i].instr, 4 + 2);
        assert_int_equal(counts[i].link_tracks, 2);
        assert_int_equal(counts[i].bad_step, 0);
        assert_true(counts[i].link_bytes == 12 * 65536);
    }
    char *t = read_all(tu_join(dir, "cc1.json"));
    assert_non_null(strstr(t, "\"name\":\"chip 0 links\""));
    assert_non_null(strstr(t, "\"name\":\"chip 1 links\""));
    assert_non_null(strstr(t, "\"args\":{\"name\":\"link 0->1\"}"));
    assert_non_null(strstr(t, "\"args\":{\"name\":\"link 1->0\"}"));
    assert_non_null(strstr(t, "\"args\":{\"name\":\"cc steps\"}"));
    assert_non_null(strstr(t, "\"name\":\"all_reduce step 1/6\""));
    assert_non_null(strstr(t, "\"name\":\"all_reduce step 6/6\""));
    assert_non_null(strstr(t, "\"phase\":\"reduce-scatter\""));
    assert_non_null(strstr(t, "\"phase\":\"all-gather\""));
    assert_non_null(strstr(t, "\"bottleneck\":\"link "));
    /* the link bandwidth counters rise to a nonzero rate and fall back to zero */
    assert_true(line_with(t, "\"name\":\"link 0->1 bandwidth\",\"pid\":20001", "{\"GB/s\":0}"));
    assert_true(count(t, "\"name\":\"link 1->0 bandwidth\",\"pid\":20002") >= 12);
    assert_null(strstr(t, "\"name\":\"link 0->1 bandwidth\",\"pid\":20002"));
    /* the early members waited for core 3 */
    assert_non_null(strstr(t, "\"wait_collective_ns\":"));
    assert_non_null(strstr(t, "\"stall\":\"collective\""));
    free(t);
    /* only the cc engine and the links are kept with --trace-engines cc; none with pe */
    char args[256], *out = NULL;
    snprintf(args, sizeof args,
             "run cc.nca --arch trn1-32xl --timing-only -q --trace ccpe.json --trace-engines dve");
    assert_int_equal(ncsim(args, &out), 0);
    free(out);
    assert_checker_ok(tu_join(dir, "ccpe.json"), NULL);
    t = read_all(tu_join(dir, "ccpe.json"));
    assert_int_equal(count(t, "\"cat\":\"link\""), 0);
    assert_int_equal(count(t, "\"cat\":\"collective\""), 0);
    free(t);
}

/* All-to-all over 8 cores of 4 chips: chunks share links, so links get extra lanes; slices
 * still nest on every track. */
static void test_collective_lanes(void **state)
{
    (void)state;
    char prog[4096];
    size_t at = (size_t)snprintf(prog, sizeof prog, ".chips 4\n.group g = 0..7\n");
    for (int c = 0; c < 4; c++)
        at += (size_t)snprintf(prog + at, sizeof prog - at,
                               ".hbm x%d fp32 [64, 1024] scratch chip=%d\n"
                               ".hbm y%d fp32 [64, 1024] scratch chip=%d\n",
                               c, c, c, c);
    for (int k = 0; k < 8; k++)
        at += (size_t)snprintf(prog + at, sizeof prog - at,
                               ".core %d\n.engine cc\nall_to_all y%d, x%d, group=g\n", k, k / 2,
                               k / 2);
    tu_write_file(tu_join(dir, "a2a.nca"), prog, at);
    assert_int_equal(ncsim("run a2a.nca --arch trn1-32xl --timing-only -q --trace a2a.json",
                           NULL),
                     0);
    tc_stats_t st;
    assert_checker_ok(tu_join(dir, "a2a.json"), &st);
    char *t = read_all(tu_join(dir, "a2a.json"));
    assert_non_null(strstr(t, "\"args\":{\"name\":\"link 0->1 #2\"}"));
    assert_non_null(strstr(t, "\"phase\":\"exchange\""));
    assert_non_null(strstr(t, "\"algorithm\":\"pairwise\""));
    free(t);
}

/* A deadlocked program still leaves a well-formed trace of what ran. */
static void test_deadlock_trace(void **state)
{
    (void)state;
    const char *prog = ".core 0\n.sbuf a fp32 [128, 64]\n.sem s\n.engine dve\n"
                       "    memset a, 1.0 | post s\n    memset a, 2.0 | wait s >= 2\n";
    tu_write_file(tu_join(dir, "dead.nca"), prog, strlen(prog));
    char *out = NULL;
    assert_int_equal(ncsim("run dead.nca --timing-only -q --trace dead.json", &out), 1);
    assert_non_null(strstr(out, "deadlock"));
    free(out);
    tc_stats_t st;
    assert_checker_ok(tu_join(dir, "dead.json"), &st);
    assert_true(st.slices == 1);
}

/* trc_interval_union: the time a set of spans covers, overlaps and repeats counted once
 * (values worked by hand). */
static void test_interval_union(void **state)
{
    (void)state;
    assert_int_equal(trc_interval_union(NULL, 0), 0);
    trc_interval_t one[] = {{5, 9}};
    assert_int_equal(trc_interval_union(one, 1), 4);
    /* unsorted; [0,10) and [4,6) nested; [10,12) touches [0,10); [20,25) apart; [22,30)
     * overlaps it; an empty span [40,40): 12 + 10 = 22 */
    trc_interval_t v[] = {{20, 25}, {4, 6}, {10, 12}, {0, 10}, {22, 30}, {40, 40}, {4, 6}};
    assert_int_equal(trc_interval_union(v, sizeof v / sizeof *v), 22);
    /* sorted by start, then end */
    assert_int_equal(v[0].start, 0);
    assert_int_equal(v[1].start, 4);
    assert_int_equal(v[6].start, 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interval_union),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_roundtrip_json),
        cmocka_unit_test(test_roundtrip_json_gz),
        cmocka_unit_test(test_json_gz_is_plain_gzip),
        cmocka_unit_test(test_roundtrip_pftrace),
        cmocka_unit_test(test_pftrace_implied),
        cmocka_unit_test(test_stable_same_bytes),
        cmocka_unit_test(test_pftrace_stable_and_counters),
        cmocka_unit_test(test_pftrace_small_events),
        cmocka_unit_test(test_pftrace_counter_values),
        cmocka_unit_test(test_pftrace_extra_counters_packed),
        cmocka_unit_test(test_reader_errors),
        cmocka_unit_test(test_checker_catches),
        cmocka_unit_test(test_run_json),
        cmocka_unit_test(test_formats_agree),
        cmocka_unit_test(test_formats_same_records),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_deadlock_trace),
        cmocka_unit_test(test_collective_trace),
        cmocka_unit_test(test_collective_lanes),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
