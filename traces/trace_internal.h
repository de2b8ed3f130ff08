/*
 * trace_internal.h -- pieces shared by the writers and readers of traces/: a buffered output
 * (plain or gzip), fast exact number formatting, and protobuf wire-format helpers.
 */
#ifndef NCSIM_TRACES_INTERNAL_H
#define NCSIM_TRACES_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <zlib.h>

#include "file.h"
#include "trace.h"

/* ---- buffered output ------------------------------------------------------------------------ */

#define TRC_OUT_BUFSZ (1u << 18)
#define TRC_OUT_NBUF 8

/*
 * Filled buffers go to a writer thread that compresses (gzip) and writes them, so that
 * deflate and the disk overlap with the simulation; output order is kept, so files stay
 * byte-identical. Without a thread (it could not be started) buffers are written inline.
 */
typedef struct trc_out {
    isa_file_out_t file; /* the temporary beside the target (isa/file.h) */
    FILE *f;
    struct trc_gzip *gz; /* .json.gz: the compressor in front of f (common.c), else NULL */
    unsigned char *buf; /* being filled */
    size_t n;
    uint64_t total;     /* bytes produced (before compression) */
    int failed;
    char err[256];
    /* the writer thread */
    int threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t have_full, have_free;
    unsigned char *full[TRC_OUT_NBUF];
    size_t full_len[TRC_OUT_NBUF];
    unsigned full_head, nfull;
    unsigned char *free_bufs[TRC_OUT_NBUF];
    unsigned nfree;
    int closing;
    int thread_failed;
    char thread_err[256];
} trc_out_t;

int trc_out_open(trc_out_t *o, const char *path, int gzip);
void trc_out_flush(trc_out_t *o);
/* 0 on success. KEEP 1: the file is renamed into place when everything was written; 0 (or a
 * failure): the temporary is removed and nothing appears under the target's name. */
int trc_out_close(trc_out_t *o, int keep);

/* Room for `n` more bytes (n <= TRC_OUT_BUFSZ); returns where to write them. */
static inline unsigned char *trc_out_reserve(trc_out_t *o, size_t n)
{
    if (o->n + n > TRC_OUT_BUFSZ)
        trc_out_flush(o);
    return o->buf + o->n;
}
static inline void trc_out_commit(trc_out_t *o, size_t n)
{
    o->n += n;
    o->total += n;
}
void trc_out_write(trc_out_t *o, const void *data, size_t n);
static inline void trc_out_str(trc_out_t *o, const char *s, size_t n)
{
    trc_out_write(o, s, n);
}

/* ---- numbers as text -------------------------------------------------------------------------- */

/* Decimal digits of v into p; returns the count (at most 20). */
size_t trc_fmt_u64(char *p, uint64_t v);
/* v / 10^decimals with trailing zeros (and a bare point) dropped: picoseconds as
 * microseconds (6) or nanoseconds (3), exactly. At most 28 characters. */
size_t trc_fmt_fixed(char *p, uint64_t v, unsigned decimals);
/* A double that reads back identically ("%.17g", JSON-safe: non-finite becomes 0). */
size_t trc_fmt_f64(char *p, double v);
/* Exact parse of a decimal text ("12.345", "7", "1e3") scaled by 10^decimals, rounded to
 * the nearest integer; -1 when it is not a non-negative number. */
int trc_parse_scaled(const char *s, size_t len, unsigned decimals, uint64_t *out);

/* ---- protobuf wire format --------------------------------------------------------------------- */

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

static inline size_t pb_put_varint(unsigned char *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}
static inline size_t pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}
static inline size_t pb_put_tag(unsigned char *p, uint32_t field, unsigned wire)
{
    return pb_put_varint(p, ((uint64_t)field << 3) | wire);
}

/* A growable message buffer; nested messages are written with a reserved length prefix
 * that pb_end() patches (lengths are padded varints when needed, which protobuf allows). */
typedef struct pb_buf {
    unsigned char *p;
    size_t n, cap;
    int failed;
} pb_buf_t;

int pb_reserve(pb_buf_t *b, size_t more);
void pb_varint_field(pb_buf_t *b, uint32_t field, uint64_t v);
void pb_sint_field(pb_buf_t *b, uint32_t field, int64_t v); /* int32/int64 (not zigzag) */
void pb_double_field(pb_buf_t *b, uint32_t field, double v);
void pb_fixed64_field(pb_buf_t *b, uint32_t field, uint64_t v);
void pb_bytes_field(pb_buf_t *b, uint32_t field, const void *data, size_t n);
void pb_string_field(pb_buf_t *b, uint32_t field, const char *s);
/* Open a nested message: returns the position to pass to pb_end. */
size_t pb_begin(pb_buf_t *b, uint32_t field);
void pb_end(pb_buf_t *b, size_t at);

/* Reading: a cursor over one message. */
typedef struct pb_in {
    const unsigned char *p, *end;
} pb_in_t;

typedef struct pb_field {
    uint32_t field;
    unsigned wire;
    uint64_t v;                 /* VARINT, I64, I32 */
    const unsigned char *data;  /* LEN */
    size_t len;
} pb_field_t;

/* Next field; 1 when one was read, 0 at the end, -1 on malformed input. */
int pb_next(pb_in_t *in, pb_field_t *f);
/* One varint, or one little-endian fixed value of `bytes` (4 or 8) bytes: 0, or -1 when the
 * input ends first. (Also the elements of a packed repeated field.) */
int pb_get_varint(pb_in_t *in, uint64_t *v);
int pb_get_fixed(pb_in_t *in, size_t bytes, uint64_t *v);

/* ---- JSON writer and pftrace writer back ends (writer.c dispatches) ------------------------------ */

typedef struct trc_backend {
    ncsim_status_t (*write)(trc_writer_t *w, const trc_record_t *r);
    ncsim_status_t (*finish)(trc_writer_t *w);
    void (*destroy)(trc_writer_t *w);
} trc_backend_t;

struct trc_writer {
    trc_out_t out;
    trc_format_t fmt;
    const trc_backend_t *be;
    void *state;
    uint64_t events;
    ncsim_status_t status;
};

extern const trc_backend_t trc_json_backend;
extern const trc_backend_t trc_pftrace_backend;

/* Readers: the whole (decompressed) stream comes through `read` in chunks. */
typedef struct trc_src {
    gzFile gz;
    const char *path;
} trc_src_t;

ncsim_status_t trc_read_json(trc_src_t *src, const unsigned char *head, size_t nhead,
                             trc_record_fn fn, void *ctx, char *err, size_t errlen);
ncsim_status_t trc_read_pftrace(trc_src_t *src, const unsigned char *head, size_t nhead,
                                trc_record_fn fn, void *ctx, char *err, size_t errlen);

/* Pairing the two ends of flows by (category, id), for the readers. */
typedef struct flow_end {
    uint64_t id;
    uint32_t pid, tid;
    uint64_t ts_ps;
    char cat[32];   /* pairing key with id */
    char label[32]; /* category to report when it differs from the key ("" : cat) */
    char name[64];
    uint8_t is_end; /* 0: source, 1: destination */
    uint8_t used;   /* slot state: 0 empty, 1 used, 2 removed */
} flow_end_t;

typedef struct flowpair {
    flow_end_t *slots;
    size_t cap, n, removed;
} flowpair_t;

/* Returns 1 when `e` completes a stored end (out filled, the stored end dropped), 0 when it
 * was stored, -1 when out of memory. */
int flowpair_add(flowpair_t *fp, const flow_end_t *e, trc_flow_t *out);
void flowpair_free(flowpair_t *fp);

/* Store one argument into the args struct described by (f, nf) when its key is known.
 * JSON gives text (numbers as written), Perfetto gives typed values. */
typedef struct arg_value {
    int is_text;          /* 1: text/len; 0: u64 or f64 */
    int is_number;        /* text is a JSON number (not a string) */
    const char *text;
    size_t len;
    int is_double;
    uint64_t u;
    double d;
} arg_value_t;
/* The value of field f of the args struct at base, for the writers: *u (integers and ps),
 * *d (reals) or *s (strings, "" for none); 0 when it is zero and f is not `always` (the
 * writers leave it out), else 1. */
int trc_get_field(const trc_field_t *f, const void *base, uint64_t *u, double *d, const char **s);
/* A span of time [start, end) in picoseconds, and the time a set of them covers (overlaps
 * counted once; sorts the array). Engine busy time in the report and the profile summary. */
typedef struct trc_interval {
    uint64_t start, end;
} trc_interval_t;
uint64_t trc_interval_union(trc_interval_t *v, size_t n);

/* Returns the field index set, or -1 when the key is not a field. STR fields point into
 * value text, which must outlive the use of the struct. */
int trc_set_field(const trc_field_t *f, unsigned nf, void *base, const char *key, size_t keylen,
                  const arg_value_t *v);

/* Slice arguments a .pftrace leaves out because they follow from others, which its reader
 * puts back (one rule for both sides):
 *   instr: ii (= the slice's duration), hw_flops (= flops), wait (= the sum of wait_*);
 *   dma:   src and dst (the name is "SRC->DST"), queued (= fixed + queue_wait).
 * A field is left out only when it equals what the reader rebuilds; these fields were
 * always written before, or zero whenever what they follow from is zero, so older files
 * read as they did. */
#define TRC_FI_INSTR(member, key, type, always) TRC_FI_INSTR_##member,
enum { TRC_INSTR_FIELDS(TRC_FI_INSTR) TRC_FI_INSTR_COUNT };
#undef TRC_FI_INSTR
#define TRC_FI_DMA(member, key, type, always) TRC_FI_DMA_##member,
enum { TRC_DMA_FIELDS(TRC_FI_DMA) TRC_FI_DMA_COUNT };
#undef TRC_FI_DMA
#define TRC_PF_SIDE_MAX 32 /* src and dst are left out only when shorter */
/* The fields of s (bits by trc_slice_fields index) the writer leaves out. */
uint64_t trc_pf_implied(const trc_slice_t *s);
/* Put them back into s: `present` has the bits of the fields the file held; side[2] holds
 * src and dst when they come from the name. */
void trc_pf_restore(trc_slice_t *s, uint64_t present, char side[2][TRC_PF_SIDE_MAX]);

/* Perfetto field numbers used by both the writer and the reader (protos/perfetto/trace). */
enum {
    PF_TRACE_PACKET = 1,
    /* TracePacket */
    PF_PKT_TIMESTAMP = 8,
    PF_PKT_SEQ_ID = 10,
    PF_PKT_TRACK_EVENT = 11,
    PF_PKT_INTERNED = 12,
    PF_PKT_SEQ_FLAGS = 13,
    PF_PKT_TRACK_DESCRIPTOR = 60,
    /* TrackDescriptor */
    PF_TD_UUID = 1,
    PF_TD_NAME = 2,
    PF_TD_PROCESS = 3,
    PF_TD_THREAD = 4,
    PF_TD_PARENT = 5,
    PF_TD_COUNTER = 8,
    /* ProcessDescriptor */
    PF_PD_PID = 1,
    PF_PD_NAME = 6,
    /* ThreadDescriptor */
    PF_THD_PID = 1,
    PF_THD_TID = 2,
    PF_THD_NAME = 5,
    /* CounterDescriptor */
    PF_CD_UNIT_NAME = 6,
    /* TrackEvent */
    PF_TE_CATEGORY_IIDS = 3,
    PF_TE_DEBUG = 4,
    PF_TE_TYPE = 9,
    PF_TE_NAME_IID = 10,
    PF_TE_TRACK_UUID = 11,
    PF_TE_CATEGORIES = 22,
    PF_TE_NAME = 23,
    PF_TE_COUNTER_VALUE = 30,
    PF_TE_DOUBLE_COUNTER_VALUE = 44,
    /* more counters of the same instant on one event: the tracks and their values, in the
     * same order (int64 values, then doubles) */
    PF_TE_EXTRA_COUNTER_UUIDS = 31,
    PF_TE_EXTRA_COUNTER_VALUES = 12,
    PF_TE_EXTRA_DOUBLE_COUNTER_UUIDS = 45,
    PF_TE_EXTRA_DOUBLE_COUNTER_VALUES = 46,
    PF_TE_FLOW_IDS = 47,
    PF_TE_TERMINATING_FLOW_IDS = 48,
    /* TrackEvent.Type */
    PF_TYPE_SLICE_BEGIN = 1,
    PF_TYPE_SLICE_END = 2,
    PF_TYPE_INSTANT = 3,
    PF_TYPE_COUNTER = 4,
    /* DebugAnnotation */
    PF_DA_NAME_IID = 1,
    PF_DA_BOOL = 2,
    PF_DA_UINT = 3,
    PF_DA_INT = 4,
    PF_DA_DOUBLE = 5,
    PF_DA_STRING = 6,
    PF_DA_NAME = 10,
    PF_DA_STRING_IID = 17, /* an interned string value (InternedData field 29) */
    /* InternedData and its entries (iid = 1, name = 2) */
    PF_ID_CATEGORIES = 1,
    PF_ID_NAMES = 2,
    PF_ID_ANNOTATION_NAMES = 3,
    PF_ID_STRING_VALUES = 29, /* debug_annotation_string_values: InternedString {iid, str} */
    PF_IE_IID = 1,
    PF_IE_NAME = 2,
    /* TracePacket.sequence_flags */
    PF_SEQ_CLEARED = 1,
    PF_SEQ_NEEDS_STATE = 2
};

/* The one packet sequence this writer uses, and the global track carrying the run. */
#define TRC_PF_SEQUENCE 1u
#define TRC_PF_RUN_UUID 1u

/* Track uuid of a thread track (its tid, unique in the trace) or of a process (tid 0):
 * pid * 1000, which no tid uses. */
static inline uint64_t trc_pf_track_uuid(uint32_t pid, uint32_t tid)
{
    return tid ? tid : (uint64_t)pid * TRC_TIDS_PER_PID;
}
/* Counter track n (from 1): 2 to 999 first, which no process or thread uses (pids start at
 * 1, so their uuids at 1000) and which take one or two bytes, then from 2^27 (above every
 * pid * 1000 + tid). Readers know tracks by their descriptors, whatever the number. */
#define TRC_PF_COUNTER_UUID (1ull << 27)
static inline uint64_t trc_pf_counter_uuid(uint64_t n)
{
    return n < TRC_TIDS_PER_PID - 1 ? TRC_PF_RUN_UUID + n : TRC_PF_COUNTER_UUID + n;
}

#endif
