/*
 * trace.h -- performance traces: the record kinds, writers for Chrome Trace Event JSON
 * (optionally gzipped) and Perfetto protobuf (.pftrace), and a reader for both.
 *
 * traces/ knows nothing of the simulator (dependencies run sim -> traces): sim/trace_sink.c
 * converts the simulator's hook records into the records below. Every record kind, and every
 * argument a slice carries, is defined once in the X-macro tables of this header; the
 * writers, the reader and the report expand the same tables (docs/traces.md describes the
 * resulting files).
 *
 * Times are integer picoseconds everywhere in this API. JSON files carry microseconds with
 * six decimals (exactly the picoseconds); .pftrace timestamps are whole nanoseconds, so
 * each slice also carries its exact start and duration in picoseconds as arguments.
 */
#ifndef NCSIM_TRACES_TRACE_H
#define NCSIM_TRACES_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* ---- formats -------------------------------------------------------------------------------- */

/* XX(ID, file name ending) -- checked in this order, so ".json.gz" before ".json" */
#define TRC_FORMAT_MAP(XX) XX(JSON_GZ, ".json.gz") XX(JSON, ".json") XX(PFTRACE, ".pftrace")

typedef enum trc_format {
#define XX(id, ext) TRC_FORMAT_##id,
    TRC_FORMAT_MAP(XX)
#undef XX
        TRC_FORMAT_COUNT
} trc_format_t;

/* Format implied by a file name's ending; TRC_FORMAT_COUNT when none matches. */
trc_format_t trc_format_for_path(const char *path);
const char *trc_format_ext(trc_format_t f);

/* ---- processes and tracks ----------------------------------------------------------------------- */

/*
 * One process per core ("chip C core K", pid trc_pid_core(core)) holds its engine and DMA
 * queue tracks, its collective steps and its counters; one process per chip ("chip C", pid
 * trc_pid_chip(chip)) holds what the two cores share: HBM bandwidth; one process per chip
 * with NeuronLinks ("chip C links", pid trc_pid_links(chip)) holds a track per directed link
 * leaving the chip ("link C->D"; overlapping transfers on extra lanes "link C->D #2", ...)
 * and their bandwidth counters. A track is a thread of its process; its kind follows from
 * its tid range:
 * XX(ID, name, first tid, how many)
 */
#define TRC_TRACK_KIND_MAP(XX)                                                                 \
    XX(ENGINE, "engine", 1, 16)                                                                \
    XX(DMA_QUEUE, "dma queue", 100, 64)                                                        \
    XX(LINK, "neuronlink", 400, 600)                                                           \
    XX(COLLECTIVE, "collective engine", 300, 64)

typedef enum trc_track_kind {
#define XX(id, name, first, n) TRC_TRACK_##id,
    TRC_TRACK_KIND_MAP(XX)
#undef XX
        TRC_TRACK_KIND_COUNT
} trc_track_kind_t;

#define TRC_PID_CHIP_BASE 10001u
#define TRC_PID_LINKS_BASE 20001u
static inline uint32_t trc_pid_core(uint32_t core)
{
    return core + 1;
}
static inline uint32_t trc_pid_chip(uint32_t chip)
{
    return TRC_PID_CHIP_BASE + chip;
}
static inline uint32_t trc_pid_links(uint32_t chip)
{
    return TRC_PID_LINKS_BASE + chip;
}
/* Core of a core pid, -1 for a chip pid. */
static inline int64_t trc_core_of_pid(uint32_t pid)
{
    return pid >= 1 && pid < TRC_PID_CHIP_BASE ? (int64_t)pid - 1 : -1;
}
/* Chip of a chip pid or a chip-links pid, -1 for a core pid. */
static inline int64_t trc_chip_of_pid(uint32_t pid)
{
    if (pid >= TRC_PID_LINKS_BASE)
        return (int64_t)pid - TRC_PID_LINKS_BASE;
    return pid >= TRC_PID_CHIP_BASE ? (int64_t)pid - TRC_PID_CHIP_BASE : -1;
}
/*
 * Thread ids are unique in the whole trace (viewers treat a tid as a system-wide thread):
 * tid = pid * 1000 + the kind's first local id + n. trc_track_kind_of_tid gives the kind of a
 * tid (TRC_TRACK_KIND_COUNT if none) and n.
 */
#define TRC_TIDS_PER_PID 1000u
uint32_t trc_tid(uint32_t pid, trc_track_kind_t kind, uint32_t n);
trc_track_kind_t trc_track_kind_of_tid(uint32_t tid, uint32_t *n);
const char *trc_track_kind_name(trc_track_kind_t k);

/* ---- argument fields ---------------------------------------------------------------------------- */

/*
 * Field types: U64 integer; F64 real; STR text; PS a time in picoseconds, written as
 * nanoseconds (key ending in _ns) with exactly three decimals in JSON.
 */
typedef enum trc_field_type { TRC_FT_U64, TRC_FT_F64, TRC_FT_STR, TRC_FT_PS } trc_field_type_t;

#define TRC_CTYPE_U64 uint64_t
#define TRC_CTYPE_F64 double
#define TRC_CTYPE_STR const char *
#define TRC_CTYPE_PS uint64_t

/* XX(member, "key", TYPE, always) -- `always`: written even when zero or empty */

/* The run: what the report needs to turn times into rates and utilisations. */
#define TRC_RUN_FIELDS(XX)                                                                     \
    XX(generator, "generator", STR, 1)                                                         \
    XX(program, "program", STR, 1)                                                             \
    XX(arch, "arch", STR, 1)                                                                   \
    XX(chips, "chips", U64, 1)                                                                 \
    XX(cores, "cores", U64, 1)                                                                 \
    XX(timing_only, "timing_only", U64, 1)                                                     \
    XX(peak_flops_per_core, "peak_flops_per_core", F64, 1)                                     \
    XX(hbm_peak_gbps, "hbm_peak_gbps_per_chip", F64, 1)                                        \
    XX(dma_peak_gbps, "dma_peak_gbps_per_core", F64, 1)                                        \
    XX(core_clock_ghz, "core_clock_ghz", F64, 0)                                               \
    XX(window_start, "trace_start_ns", PS, 0)                                                  \
    XX(window_end, "trace_end_ns", PS, 0)                                                      \
    XX(engines, "trace_engines", STR, 0)

/* An instruction on its engine track. The slice lasts the initiation interval (the engine
 * is busy); the instruction completes (results visible, posts fire) `latency` after start.
 * wait_* is the time it was ready but held, by cause; `stall` names the main cause.
 * cost: the cost model's formula with its values filled in (sim_explain_instr). */
#define TRC_INSTR_FIELDS(XX)                                                                   \
    XX(index, "index", U64, 1)                                                                 \
    XX(line, "line", U64, 0)                                                                   \
    XX(operands, "operands", STR, 0)                                                           \
    XX(ii, "ii_ns", PS, 1)                                                                     \
    XX(latency, "latency_ns", PS, 1)                                                           \
    XX(bytes, "bytes", U64, 0)                                                                 \
    XX(flops, "flops", U64, 0)                                                                 \
    XX(hw_flops, "hw_flops", U64, 0)                                                           \
    XX(hw_flops_fp32, "hw_flops_fp32", U64, 0)                                                 \
    XX(sbuf_read, "sbuf_read_bytes", U64, 0)                                                   \
    XX(sbuf_write, "sbuf_write_bytes", U64, 0)                                                 \
    XX(psum_read, "psum_read_bytes", U64, 0)                                                   \
    XX(psum_write, "psum_write_bytes", U64, 0)                                                 \
    XX(wait, "wait_ns", PS, 0)                                                                 \
    XX(wait_semaphore, "wait_semaphore_ns", PS, 0)                                             \
    XX(wait_port, "wait_port_ns", PS, 0)                                                       \
    XX(wait_interlock, "wait_interlock_ns", PS, 0)                                             \
    XX(semaphore, "semaphore", STR, 0)                                                         \
    XX(stall, "stall", STR, 0)                                                                 \
    XX(wait_collective, "wait_collective_ns", PS, 0)                                           \
    XX(cost, "cost", STR, 0)

/* A DMA transfer on its queue track: from the start to the end of its data phase.
 * queued = fixed + queue_wait (issue to start); limited_by: what set its rate for most of
 * the data phase. The breakdown is stored as numbers: cap_gbps and engines (its own cap and
 * the DMA engines its pieces can use), the shares of the core's DMA engines and of the chip's
 * HBM it got (percent, to 0.1), and how long each limit set its rate (limited_*). Readers
 * rebuild `cost`, the breakdown as text (trc_dma_cost_text, the same text as
 * sim_explain_dma); older traces carry the text itself. desc_start and descriptors: when its
 * descriptors started being processed and for how long (0: a trace older than them).
 * bytes: the bytes written (destination side, in its type); src_bytes: the bytes read from
 * the source when a type conversion makes them differ, else 0 (trc_dma_src_bytes). */
#define TRC_DMA_FIELDS(XX)                                                                     \
    XX(index, "index", U64, 1)                                                                 \
    XX(issuer, "issuer", STR, 1)                                                               \
    XX(line, "line", U64, 0)                                                                   \
    XX(operands, "operands", STR, 0)                                                           \
    XX(bytes, "bytes", U64, 1)                                                                 \
    XX(src, "src", STR, 1)                                                                     \
    XX(dst, "dst", STR, 1)                                                                     \
    XX(accumulate, "accumulate", U64, 0)                                                       \
    XX(queued, "queued_ns", PS, 0)                                                             \
    XX(gbps, "gbps", F64, 0)                                                                   \
    XX(pieces, "pieces", U64, 0)                                                               \
    XX(piece_bytes, "piece_bytes", F64, 0)                                                     \
    XX(efficiency, "efficiency", F64, 0)                                                       \
    XX(fixed, "fixed_ns", PS, 0)                                                               \
    XX(queue_wait, "queue_wait_ns", PS, 0)                                                     \
    XX(limit, "limited_by", STR, 0)                                                            \
    XX(cap_gbps, "cap_gbps", F64, 0)                                                           \
    XX(engines, "engines", F64, 0)                                                             \
    XX(dma_share, "dma_share_pct", F64, 0)                                                     \
    XX(hbm_share, "hbm_share_pct", F64, 0)                                                     \
    XX(limited_own, "limited_own_ns", PS, 0)                                                   \
    XX(limited_engines, "limited_engines_ns", PS, 0)                                           \
    XX(limited_hbm, "limited_hbm_ns", PS, 0)                                                   \
    XX(limited_link, "limited_link_ns", PS, 0)                                                 \
    XX(cost, "cost", STR, 0)                                                                   \
    XX(desc_start, "descriptors_start_ns", PS, 0)                                              \
    XX(descriptors, "descriptors_ns", PS, 0)                                                   \
    XX(src_bytes, "src_bytes", U64, 0)

/* A collective's chunk crossing a NeuronLink, on the link's track ("chip C links" process),
 * from the start to the landing of the chunk. src_chip/dst_chip: the link's ends;
 * from_core/to_core: the chunk's (a route of several hops crosses several links). */
#define TRC_LINK_FIELDS(XX)                                                                    \
    XX(bytes, "bytes", U64, 1)                                                                 \
    XX(src_chip, "src_chip", U64, 1)                                                           \
    XX(dst_chip, "dst_chip", U64, 1)                                                           \
    XX(gbps, "gbps", F64, 0)                                                                   \
    XX(collective, "collective", STR, 0)                                                       \
    XX(collective_id, "collective_id", U64, 1)                                                 \
    XX(step, "step", U64, 0)                                                                   \
    XX(from_core, "from_core", U64, 1)                                                         \
    XX(to_core, "to_core", U64, 1)                                                             \
    XX(group, "group", STR, 0)                                                                 \
    XX(link_gbps, "link_gbps", F64, 0)

/* A step of a collective, on the "cc steps" track of each member core: from the start of
 * the step (its fixed latency, then the chunks moving) to the landing of its last chunk.
 * index/line/operands: the member's collective instruction. step counts from 1. What the
 * member sent (bytes to to_core; 0 bytes: nothing), how long its own chunk moved and at what
 * rate, which chunk ended the step (slowest) and the bottleneck: the resource (a link "link
 * C->D", "HBM chip C", "DMA core K") busiest during the step's data phase, with its use. */
#define TRC_COLLECTIVE_FIELDS(XX)                                                              \
    XX(index, "index", U64, 1)                                                                 \
    XX(line, "line", U64, 0)                                                                   \
    XX(operands, "operands", STR, 0)                                                           \
    XX(group, "group", STR, 0)                                                                 \
    XX(step, "step", U64, 0)                                                                   \
    XX(bytes, "bytes", U64, 0)                                                                 \
    XX(collective, "collective", STR, 0)                                                       \
    XX(collective_id, "collective_id", U64, 0)                                                 \
    XX(nsteps, "nsteps", U64, 0)                                                               \
    XX(phase, "phase", STR, 0)                                                                 \
    XX(algorithm, "algorithm", STR, 0)                                                         \
    XX(members, "members", U64, 0)                                                             \
    XX(size, "size_bytes", U64, 0)                                                             \
    XX(to_core, "to_core", U64, 1)                                                             \
    XX(reduce, "reduce", U64, 0)                                                               \
    XX(latency, "latency_ns", PS, 0)                                                           \
    XX(moving, "moving_ns", PS, 0)                                                             \
    XX(gbps, "gbps", F64, 0)                                                                   \
    XX(slowest, "slowest", STR, 0)                                                             \
    XX(bottleneck, "bottleneck", STR, 0)                                                       \
    XX(bottleneck_pct, "bottleneck_pct", F64, 0)

/* XX(ID, member, "category", FIELDS) -- the category names the kind in both formats */
#define TRC_SLICE_KIND_MAP(XX)                                                                 \
    XX(INSTR, instr, "instr", TRC_INSTR_FIELDS)                                                \
    XX(DMA, dma, "dma", TRC_DMA_FIELDS)                                                        \
    XX(LINK, link, "link", TRC_LINK_FIELDS)                                                    \
    XX(COLLECTIVE, collective, "collective", TRC_COLLECTIVE_FIELDS)

#define TRC_FIELD_MEMBER(member, key, type, always) TRC_CTYPE_##type member;

typedef struct trc_run {
    TRC_RUN_FIELDS(TRC_FIELD_MEMBER)
} trc_run_t;

#define XX(ID, member, cat, FIELDS)                                                            \
    typedef struct trc_##member##_args {                                                       \
        FIELDS(TRC_FIELD_MEMBER)                                                               \
    } trc_##member##_args_t;
TRC_SLICE_KIND_MAP(XX)
#undef XX

typedef enum trc_slice_kind {
#define XX(ID, member, cat, FIELDS) TRC_SLICE_##ID,
    TRC_SLICE_KIND_MAP(XX)
#undef XX
        TRC_SLICE_KIND_COUNT
} trc_slice_kind_t;

/* Description of one field, for the generic loops of writers and readers. */
typedef struct trc_field {
    const char *key;
    uint8_t type;   /* trc_field_type_t */
    uint8_t always;
    uint16_t offset; /* in the args struct */
    uint16_t keylen; /* strlen(key) */
} trc_field_t;

const trc_field_t *trc_run_fields(unsigned *n);
const trc_field_t *trc_slice_fields(trc_slice_kind_t k, unsigned *n);
const char *trc_slice_category(trc_slice_kind_t k);
/* Kind for a category name; TRC_SLICE_KIND_COUNT when unknown. */
trc_slice_kind_t trc_slice_kind_lookup(const char *cat, size_t len);

/* What can set a DMA transfer's rate, in the order of the limited_* fields (the simulator's
 * sim_dma_limit_t order): XX(member, name) */
#define TRC_DMA_LIMIT_MAP(XX)                                                                  \
    XX(limited_own, "own cap")                                                                 \
    XX(limited_engines, "DMA engines")                                                         \
    XX(limited_hbm, "HBM")                                                                     \
    XX(limited_link, "NeuronLink")

/* The breakdown of a transfer as text from its numbers (dur_ps: its slice's duration, the
 * data phase) into buf (always terminated); returns the length it needed, like snprintf.
 * Readers fill trc_dma_args_t.cost with it when a trace carries the numbers only. */
size_t trc_dma_cost_text(const trc_dma_args_t *a, uint64_t dur_ps, char *buf, size_t n);
/* The bytes a transfer read from its source: src_bytes when the trace gives it (a converting
 * transfer), else bytes (both sides of the same type). */
static inline uint64_t trc_dma_src_bytes(const trc_dma_args_t *a)
{
    return a->src_bytes ? a->src_bytes : a->bytes;
}

/* ---- records ------------------------------------------------------------------------------------ */

typedef struct trc_process {
    uint32_t pid;
    const char *name;
    int32_t sort_index;
} trc_process_t;

typedef struct trc_track {
    uint32_t pid, tid;
    const char *name;
    int32_t sort_index;
} trc_track_t;

typedef struct trc_slice {
    uint8_t kind; /* trc_slice_kind_t */
    uint32_t pid, tid;
    uint64_t ts_ps, dur_ps;
    const char *name;
    union {
#define XX(ID, member, cat, FIELDS) trc_##member##_args_t member;
        TRC_SLICE_KIND_MAP(XX)
#undef XX
    } a;
    /* For writers, optional: when the kind's `operands` is this very pointer, it is a template
     * whose '#'s stand, in order, for the space-separated numbers of operand_values (the
     * simulator's operands with their clauses' numbers apart: the template repeats, the
     * numbers do not). JSON writes the whole text, .pftrace the template and the numbers.
     * NULL: `operands` is the text. Readers leave it NULL. */
    const char *operands_tmpl;
    const char *operand_values;
    /* For writers, optional: 1 when every string of the record but operand_values (its name
     * and text arguments) stays valid and unchanged until the writer is closed, so that a
     * writer may know a string by its address (.pftrace interns it without reading it).
     * 0: strings are read anew. Readers leave it 0. */
    uint8_t stable;
} trc_slice_t;

/* One value of the counter track (pid, name, unit) from ts on. The unit is part of the
 * track's name in both formats ("HBM bandwidth" + "GB/s"). */
typedef struct trc_counter {
    uint32_t pid;
    const char *name;
    const char *unit;
    uint64_t ts_ps;
    double value;
    uint8_t stable; /* name and unit live until the writer is closed (trc_slice_t.stable) */
} trc_counter_t;

/* An arrow from the slice starting at from_ts_ps on track (from_pid, from_tid) to the one
 * starting at to_ts_ps on (to_pid, to_tid). Ids are unique in a trace. */
typedef struct trc_flow {
    uint64_t id;
    const char *cat;  /* "semaphore", "dma" */
    const char *name; /* the semaphore's name, "dma issue" */
    uint32_t from_pid, from_tid;
    uint64_t from_ts_ps;
    uint32_t to_pid, to_tid;
    uint64_t to_ts_ps;
    uint8_t stable; /* cat and name live until the writer is closed (trc_slice_t.stable) */
} trc_flow_t;

/* XX(ID, member, description) -- every kind of record a trace holds */
#define TRC_RECORD_MAP(XX)                                                                     \
    XX(RUN, run, "the run: program, architecture, peak rates, trace filters")                  \
    XX(PROCESS, process, "a process: a core, or a chip's shared tracks")                       \
    XX(TRACK, track, "a track of slices: engine, DMA queue, NeuronLink, collective engine")    \
    XX(SLICE, slice, "an interval on a track: instruction, transfer, collective step")         \
    XX(COUNTER, counter, "one value of a counter track")                                       \
    XX(FLOW, flow, "an arrow from a slice to a later one (post to wait, issue to transfer)")

typedef enum trc_kind {
#define XX(ID, member, desc) TRC_REC_##ID,
    TRC_RECORD_MAP(XX)
#undef XX
        TRC_REC_COUNT
} trc_kind_t;

typedef struct trc_record {
    uint8_t kind; /* trc_kind_t */
    union {
#define XX(ID, member, desc) trc_##member##_t member;
        TRC_RECORD_MAP(XX)
#undef XX
    } u;
} trc_record_t;

const char *trc_record_kind_name(trc_kind_t k);

/* ---- writing ------------------------------------------------------------------------------------ */

typedef struct trc_writer trc_writer_t;

/* Create `path` in format `fmt`. NCSIM_IO (message in err) when it cannot be created. */
ncsim_status_t trc_writer_open(const char *path, trc_format_t fmt, trc_writer_t **out, char *err,
                               size_t errlen);
/* Append one record. Errors are sticky: the first one is returned here and by close. */
ncsim_status_t trc_write(trc_writer_t *w, const trc_record_t *r);
/* Finish the file and free the writer (also on error). */
ncsim_status_t trc_writer_close(trc_writer_t *w, char *err, size_t errlen);
/* Why writing failed ("write error: No space left on device"), or "". */
const char *trc_writer_error(const trc_writer_t *w);
/* Trace events written so far (a JSON event, or a Perfetto TrackEvent / descriptor) and
 * bytes produced before compression. */
uint64_t trc_writer_events(const trc_writer_t *w);
uint64_t trc_writer_bytes(const trc_writer_t *w);

/* ---- reading ------------------------------------------------------------------------------------ */

/* Called for every record in file order (flows when their second end is read). Strings
 * live until the callback returns. A nonzero return stops reading (trc_read returns
 * NCSIM_OK). */
typedef int (*trc_record_fn)(void *ctx, const trc_record_t *r);

/* trc_read_flags: TRC_READ_NO_DMA_TEXT leaves a DMA slice's `cost` empty when the file
 * has the breakdown as numbers only (the caller does not need the text; building it costs
 * about a microsecond per transfer). */
#define TRC_READ_NO_DMA_TEXT 1u
ncsim_status_t trc_read_flags(const char *path, unsigned flags, trc_record_fn fn, void *ctx,
                              char *err, size_t errlen);

/* Read a trace written by trc_writer (JSON, gzipped JSON or .pftrace, told apart by their
 * content). NCSIM_IO when it cannot be opened, NCSIM_FORMAT (message says where) when it is
 * not a trace this reader understands. */
ncsim_status_t trc_read(const char *path, trc_record_fn fn, void *ctx, char *err,
                        size_t errlen);

#endif
