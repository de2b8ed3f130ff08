/*
 * report_internal.h -- what the parts of `ncsim report` share (traces/report*.c):
 *
 *   report.c          the report's lists: adding, ordering, freeing; stall names; units
 *   report_model.c    a trace read into the model below; trc_report_from_trace drives the rest
 *   report_engines.c  per-engine, stall, instruction-kind, DMA, NeuronLink and collective
 *                     figures from the model
 *   report_path.c     the critical path from the model
 *   report_verdict.c  the verdict: its candidates (from the path, or from the totals of a
 *                     statistics file) and their advice
 *   report_lines.c    the per-line profile (--by-line, --source): figures, texts, rendering
 *   report_text.c     the report as text
 *   report_json.c     the report as JSON, and the JSON helpers report_lines.c uses too
 *
 * report_load.c (report_load.h) reads a file into a report: a trace through
 * trc_report_from_trace, a statistics file's totals through the public calls of report.h.
 * The internal functions start with rpt_; the public ones (report.h) with trc_report_.
 */
#ifndef NCSIM_TRACES_REPORT_INTERNAL_H
#define NCSIM_TRACES_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_gen.h>

#include "report.h"
#include "trace.h"
#include "trace_internal.h"

/* ---- lists (report.c) ------------------------------------------------------------------------ */

/* Append a zeroed element to *arr (n elements, capacity *cap); NULL when out of memory. */
void *rpt_push(void **arr, size_t *n, size_t *cap, size_t elem);
/* Append a zeroed element to a list of the report (whose capacity follows from its length);
 * NULL when out of memory. */
void *rpt_append(void **arr, size_t *n, size_t elem);

/* ---- units and derived figures (report.c), for the text and the JSON ------------------------- */

#define RPT_SHOWN_STALLS 10 /* the largest stall causes shown (text and JSON) */
#define RPT_SHOWN_RUNS 40   /* critical-path runs shown as text (the JSON has all) */
#define RPT_SHOWN_COLLS 20  /* collectives shown as text (the JSON has all) */

/* ps as nanoseconds with three decimals, exactly, into buf. */
const char *rpt_ns3(char *buf, size_t n, uint64_t ps);
/* part / whole in percent, 0 when whole is not positive. */
double rpt_pct(double part, double whole);
/* bytes per ps as GB/s, 0 for no time. */
double rpt_gbps(uint64_t bytes, uint64_t ps);
uint64_t rpt_dma_bytes_total(const trc_report_t *r);
/* The FLOPs the cores used could do at peak in `seconds`. */
double rpt_peak_flops(const trc_report_t *r, double seconds);
/* Bus bandwidth factor (the usual convention): the bandwidth each member's link would need
 * for a ring to reach the collective's time is algbw times this. */
double rpt_busbw_factor(const trc_report_collective_t *c);

/* ---- JSON (report_json.c) -------------------------------------------------------------------- */

/* A generator configured as every report's JSON is (indented by two spaces); NULL on OOM. */
yajl_gen rpt_json_open(void);
/* The generated text with a final newline (malloc'd; NULL when out of memory); frees g. */
char *rpt_json_close(yajl_gen g);
void rpt_jkey(yajl_gen g, const char *k);
void rpt_jstr(yajl_gen g, const char *k, const char *v);
void rpt_jint(yajl_gen g, const char *k, uint64_t v);
/* ps written as a number of ns with three decimals. */
void rpt_jns(yajl_gen g, const char *k, uint64_t ps);
/* A real with `decimals` decimals (exponent form when that would not fit: a crafted input). */
void rpt_jreal(yajl_gen g, const char *k, double v, int decimals);

/* ---- the model of a trace (report_model.c) --------------------------------------------------- */

enum { SP_SBUF, SP_PSUM, SP_HBM, SP_OTHER };

/* A slice of the trace (an instruction or a transfer) as the report keeps it. */
typedef struct rs {
    uint32_t track;
    uint8_t kind;
    uint8_t src, dst, acc;
    uint32_t name;      /* string id */
    uint32_t sem;       /* string id of the semaphore waited for (0: none) */
    uint32_t line;
    uint64_t ts, dur, end; /* end: completion */
    uint64_t index;
    uint64_t wait[TRC_STALL_COUNT];
    uint64_t bytes, flops, hw_flops; /* transfers: bytes written */
    uint64_t src_bytes;  /* transfers: bytes read (trc_dma_src_bytes) */
    int64_t sem_pred, dma_pred; /* slice index of the flow source, -1 when none */
    uint32_t cost;      /* string id of its cost breakdown (transfers: shape and limit) */
    uint32_t limit;     /* transfers: string id of what set their rate */
    float efficiency;   /* transfers: of their piece size (0: unknown) */
    uint64_t queued;    /* transfers: issue to start */
    uint64_t desc_start, desc_end; /* transfers: its descriptors were processed in between
                                    * (both 0: a trace older than them) */
} rs_t;

typedef struct stall_acc {
    uint8_t cause;
    uint32_t sem;
    uint64_t ps, n;
} stall_acc_t;

#define KIND_COSTS 4 /* distinct breakdowns kept per kind and track (the busiest win) */

typedef struct kind_acc {
    uint32_t name;
    uint64_t count, busy, latency, wait, flops, hw_flops, bytes;
    uint32_t cost[KIND_COSTS];
    uint64_t cost_busy[KIND_COSTS];
} kind_acc_t;

typedef struct rtrack {
    uint32_t pid, tid;
    char name[24];
    uint32_t *s; /* slice indices in time order */
    size_t n, cap;
    int unsorted;
    stall_acc_t *stalls;
    size_t nstalls, cap_stalls;
    kind_acc_t *kinds;
    size_t nkinds, cap_kinds;
} rtrack_t;

typedef trc_interval_t interval_t;

/* A NeuronLink direction seen in link slices. */
typedef struct rlink {
    uint32_t from, to;
    double gbps;
    uint64_t transfers, bytes;
    interval_t *iv;
    size_t niv, cap_iv;
} rlink_t;

/* A step of a collective (the first member's slice for it). */
typedef struct rstep {
    uint8_t seen;
    uint64_t start, end, latency;
    uint32_t bottleneck; /* string id */
} rstep_t;

typedef struct rcoll {
    uint64_t id;
    uint32_t op, group, algorithm; /* string ids */
    uint32_t members;
    uint64_t size;
    rstep_t *steps;
    uint32_t nsteps;
} rcoll_t;

typedef struct rflow {
    uint32_t from_pid, from_tid, to_pid, to_tid;
    uint64_t from_ts, to_ts;
    int is_dma;
} rflow_t;

/* The model of a trace: its tracks, slices (flows resolved to predecessors), links and
 * collectives, with the report being filled. */
typedef struct model {
    trc_report_t *rep;
    rtrack_t *tracks;
    size_t ntracks, cap_tracks;
    size_t *index; /* (pid, tid) -> track + 1 */
    size_t cap_index;
    rs_t *sl;
    size_t nsl, cap_sl;
    rflow_t *flows;
    size_t nflows, cap_flows;
    rlink_t *links;
    size_t nlinks, cap_links;
    rcoll_t *colls;
    size_t ncolls, cap_colls;
    char **str;
    size_t nstr, cap_str;
    uint32_t *strix; /* string hash -> id + 1 */
    size_t cap_strix;
    int have_run;
    int oom;
    uint64_t window_start, window_end;
    char engines[64];
} model_t;

/* The interned string `id` ("" for 0 or an unknown id). */
const char *rpt_str_of(const model_t *m, uint32_t id);

/* The core a track belongs to (-1: not a core's). */
static inline int64_t rpt_core_of(const rtrack_t *t)
{
    return trc_core_of_pid(t->pid);
}

/* ---- figures from the model: 0, or -1 when out of memory ------------------------------------- */

/* report_engines.c: engines, their stalls and instruction kinds, DMA per core, HBM traffic,
 * NeuronLinks and collectives; `order` holds the model's tracks sorted by (pid, tid). */
int rpt_engine_figures(model_t *m, rtrack_t **order);

/* A step of the critical path, latest first (report_path.c). */
typedef struct pstep {
    uint32_t slice;
    uint64_t release; /* when it released the next step */
    int via;          /* how it was reached from its predecessor (VIA_*) */
    uint32_t pred_sem;
} pstep_t;

enum { VIA_START, VIA_ENGINE, VIA_SEMAPHORE, VIA_QUEUE, VIA_ISSUE };

/* report_path.c: the critical path into rep->path, rep->path_tracks, and the verdict's
 * candidates through rpt_path_bounds. */
int rpt_critical_path(model_t *m);
/* report_verdict.c: the verdict's candidates from the path's steps (steps[0] the last). */
int rpt_path_bounds(model_t *m, const pstep_t *steps, size_t n);
/* report_verdict.c: the candidates of a report without a path (a statistics file). */
void rpt_bounds_from_totals(trc_report_t *rep);
/* report_lines.c: the per-line profile from the slices. */
int rpt_lines_from_slices(model_t *m);
/* report_lines.c: trc_report_line's index of rep->lines, made to fit one more line, or
 * rebuilt whole (`rebuild`: the lines moved); -1, and no index, when out of memory. */
int rpt_line_index(trc_report_t *rep, int rebuild);

#endif
