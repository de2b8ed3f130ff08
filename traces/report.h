/*
 * report.h -- where the time went: the figures `ncsim report` prints, built from a trace
 * (everything, critical path included) or filled by the caller from a statistics file
 * (what it holds), then printed as text with units or as JSON.
 */
#ifndef NCSIM_TRACES_REPORT_H
#define NCSIM_TRACES_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

/* Stall causes, as the simulator counts them: XX(ID, key, text) */
#define TRC_STALL_MAP(XX)                                                                      \
    XX(SEMAPHORE, "semaphore", "semaphore")                                                    \
    XX(PORT, "port", "port (shared SBUF/PSUM port busy)")                                      \
    XX(INTERLOCK, "interlock", "interlock (reads a result still being written)")              \
    XX(COLLECTIVE, "collective", "collective (waiting for the other members)")

typedef enum trc_stall {
#define XX(id, key, text) TRC_STALL_##id,
    TRC_STALL_MAP(XX)
#undef XX
        TRC_STALL_COUNT
} trc_stall_t;

const char *trc_stall_key(trc_stall_t s);
const char *trc_stall_text(trc_stall_t s);

typedef struct trc_report_engine {
    uint32_t core;
    char name[24];
    uint64_t instructions;
    uint64_t busy_ps;  /* sum of initiation intervals */
    uint64_t stall_ps; /* ready but held */
} trc_report_engine_t;

typedef struct trc_report_dma {
    uint32_t core;
    uint64_t transfers, bytes;
    uint64_t busy_ps; /* time with at least one transfer moving data */
    uint64_t descriptor_busy_ps; /* time the DMA engines had descriptors to process (from a
                                  * statistics file; 0 from a trace, which does not carry it) */
} trc_report_dma_t;

typedef struct trc_report_stall {
    uint32_t core;
    char engine[24];
    char cause[96];
    uint64_t ps;
    uint64_t instructions; /* held for this cause (0: unknown, from statistics) */
} trc_report_stall_t;

typedef struct trc_report_kind {
    char engine[24];
    char name[48];
    uint64_t count, busy_ps, latency_ps, wait_ps, flops, bytes;
    /* the dominant cost breakdown (traces with "cost" arguments): the formula with values of
     * the instances that took most of the kind's busy time, and their share of it; for
     * transfers, their shape and what limited them */
    char cost[400];
    uint64_t cost_busy_ps;
} trc_report_kind_t;

/* A run of consecutive critical-path steps on one track. */
typedef struct trc_report_step {
    uint32_t core;
    char track[24];
    char what[96];
    uint64_t count;
    uint64_t start_ps, end_ps; /* first start, release of the next run */
    uint64_t wait_ps;          /* of which, waiting (gaps not explained by a step's own time) */
    uint64_t first_index, last_index;
    uint32_t line_first, line_last;
    char via[96];              /* how the run was reached from the previous one */
} trc_report_step_t;

typedef struct trc_report_track_time {
    uint32_t core;
    char track[24];
    uint64_t ps;
} trc_report_track_time_t;

/* A directed NeuronLink: collective chunks that crossed it. */
typedef struct trc_report_link {
    uint32_t from_chip, to_chip;
    double gbps;        /* capacity of this direction (0: unknown) */
    uint64_t transfers; /* chunks (0: unknown, from statistics) */
    uint64_t bytes;
    uint64_t busy_ps;   /* time with at least one chunk crossing */
} trc_report_link_t;

/* One collective (all members together), from its steps. */
typedef struct trc_report_collective {
    uint64_t id;            /* 1, 2, ... in the order they began */
    char op[24];
    char group[48];
    char algorithm[16];
    uint32_t members;
    uint32_t steps;
    uint64_t size;          /* bytes of the operand that sets the chunks */
    uint64_t start_ps, end_ps;
    uint64_t latency_ps;    /* fixed step latencies (hops included) */
    char bottleneck[48];    /* the resource that was the steps' bottleneck for the longest */
    uint64_t bottleneck_ps; /* data time of the steps it was the bottleneck of */
    uint64_t data_ps;       /* data time of all steps */
} trc_report_collective_t;

/* Where the time went by source line (or .loc): the per-line profile of --by-line. */
typedef struct trc_report_line {
    uint32_t line;            /* 0: instructions with no line */
    uint64_t instructions;
    uint64_t busy_ps;
    uint64_t stall_by[TRC_STALL_COUNT];
    uint64_t transfers, dma_bytes;
    uint64_t dma_ps;          /* data phases of its transfers */
    uint64_t dma_wait_ps;     /* issue to start of its transfers */
    char text[120];           /* the source line, when the program file can be read */
} trc_report_line_t;

/* The stall total of a line. */
uint64_t trc_report_line_stall(const trc_report_line_t *l);
/* What --by-line sorts by: the work the line does, busy + transfer data time (its stall is
 * time it waited for the work of others). */
uint64_t trc_report_line_cost(const trc_report_line_t *l);

/* What would move each kind of bound (the verdict's advice): XX(ID, text), one whole text per
 * kind (never cut: the verdict and the JSON's "hint" print it in full). */
#define TRC_ADVICE_MAP(XX)                                                                     \
    XX(NONE, "")                                                                               \
    XX(SYNC, "engines hand work to each other and wait for completion each time: "             \
             "double-buffer so independent work overlaps the hand-offs, post as early as "     \
             "possible, fewer larger steps")                                                   \
    XX(FIXED, "issue transfers earlier (prefetch, deeper buffering) so their trigger "         \
              "latency overlaps compute and other transfers; fewer, larger transfers")         \
    XX(DMA_ENGINES, "larger contiguous pieces (>= 2 KiB per run) raise DMA efficiency; fewer " \
                    "small transfers; see what each kind costs")                               \
    XX(DMA_BW, "the DMA engines move data at their peak: fewer bytes (narrower types, reuse "  \
               "in SBUF), transfers overlapped with compute (prefetch, double buffering)")     \
    XX(DMA_DESC, "the DMA engines' descriptor stages (one descriptor per contiguous piece, "   \
                 "shared by all queues) were busy: fewer, larger contiguous pieces per DMA "   \
                 "(whole rows, wider tiles, fewer transfers); neither more queues nor "        \
                 "prefetch shortens it")                                                       \
    XX(DMA_OWN, "each transfer uses at most one DMA engine per contiguous piece and the HBM "  \
                "channels its span covers: more partitions or queues in parallel")             \
    XX(DMA_BUSY, "the core's DMA was busy: report on a trace to see whether piece sizes "      \
                 "(efficiency), per-transfer caps or the engines' bandwidth set the "          \
                 "transfers' rate")                                                            \
    XX(HBM, "HBM bandwidth: reuse data in SBUF, move fewer or narrower bytes")                 \
    XX(LINK, "NeuronLink bandwidth: fewer bytes between chips, another algorithm or topology") \
    XX(ENGINE_PE, "the tensor engine: see what each kind costs (fp32 costs 4x, N < 64 pays "   \
                  "MM_INIT); at the bf16 rate with N >= 128 this is the roofline")             \
    XX(ENGINE_SP, "the sync engine issues too much: fewer, larger dma instructions, issued "   \
                  "from several engines")                                                      \
    XX(ENGINE_CC, "collectives: fewer and larger, overlapped with compute")                    \
    XX(ENGINE_OTHER, "move elementwise work to an idle engine (act, dve, pool), larger N per " \
                     "instruction (MIN_II floor), innermost strides <= 16 B")

typedef enum trc_advice {
#define XX(id, text) TRC_ADVICE_##id,
    TRC_ADVICE_MAP(XX)
#undef XX
        TRC_ADVICE_COUNT
} trc_advice_t;

/* The whole advice text of `a` ("" for TRC_ADVICE_NONE or an unknown value). */
const char *trc_advice_text(trc_advice_t a);

/* What bounds the run, one candidate: its time on the critical path (traces) or its busy
 * time (statistics), and what would move it. */
typedef struct trc_report_bound {
    char what[64];            /* "engine pe", "DMA engines (piece efficiency)", "HBM", ... */
    uint64_t ps;
    trc_advice_t advice;
} trc_report_bound_t;

typedef struct trc_report {
    int from_trace;
    char source[512];
    char program[512];
    char arch[64];
    char failed[512]; /* non-empty: the run failed ("status": "error"), and why */
    uint64_t chips, cores_used;
    uint64_t total_ps;
    double peak_flops_per_core;
    double hbm_peak_gbps;         /* all chips */
    double dma_peak_gbps_per_core;
    uint64_t flops, hw_flops;
    int have_hw_flops;
    uint64_t hbm_read, hbm_write;
    trc_report_engine_t *engines;
    size_t nengines;
    trc_report_dma_t *dma;
    size_t ndma;
    trc_report_stall_t *stalls; /* every cause; sorted by trc_report_finish */
    size_t nstalls;
    trc_report_kind_t *kinds;
    size_t nkinds;
    int have_path;
    trc_report_step_t *path;
    size_t npath;
    uint64_t path_end_ps, path_wait_ps;
    trc_report_track_time_t *path_tracks;
    size_t npath_tracks;
    char notes[6][320];
    int nnotes;
    /* NeuronLinks and collectives (sorted by trc_report_finish) */
    trc_report_link_t *links;
    size_t nlinks;
    trc_report_collective_t *colls;
    size_t ncolls;
    /* by source line (sorted by trc_report_finish: costliest first) */
    trc_report_line_t *lines;
    size_t nlines;
    size_t *line_slots; /* the index of lines by number (trc_report_line, _find) */
    size_t nline_slots;
    /* the verdict: candidates, largest first (trc_report_finish); share of bounds_of_ps */
    trc_report_bound_t *bounds;
    size_t nbounds;
    uint64_t bounds_of_ps;    /* the critical path's end (traces) or the total time */
    int bounds_from_path;
} trc_report_t;

/* Everything from a trace file. NCSIM_IO / NCSIM_FORMAT / NCSIM_NOMEM with a message. */
ncsim_status_t trc_report_from_trace(const char *path, trc_report_t *rep, char *err,
                                     size_t errlen);

/* Building a report from elsewhere (a statistics file): each returns a zeroed entry
 * appended to its list, NULL when out of memory. Then call trc_report_finish. */
trc_report_engine_t *trc_report_add_engine(trc_report_t *rep);
trc_report_dma_t *trc_report_add_dma(trc_report_t *rep);
trc_report_stall_t *trc_report_add_stall(trc_report_t *rep);
trc_report_link_t *trc_report_add_link(trc_report_t *rep);
/* The entry of `line`, created (zeroed) when new; NULL when out of memory. */
trc_report_line_t *trc_report_line(trc_report_t *rep, uint32_t line);
/* The entry of `line`, NULL when it has none (a hashed look-up, also after
 * trc_report_finish). */
const trc_report_line_t *trc_report_line_find(const trc_report_t *rep, uint32_t line);
/* Add `ps` to the verdict candidate `what` (created with `advice` when new; a name is cut to
 * what[]). 0, or -1 when out of memory. */
int trc_report_bound_add(trc_report_t *rep, const char *what, uint64_t ps, trc_advice_t advice);
/* A buffer every verdict fits in, terminator included: two candidate names of what[]'s size,
 * shares of up to 100 x UINT64_MAX % (statistics files are data) and the longest advice take
 * under 500 bytes (tests/unit/test_trace_report.c builds that verdict for every advice). */
#define TRC_REPORT_VERDICT_MAX 600
/* The one-line verdict: "bound by engine pe: 81.2 % of the critical path; to move it: ...".
 * Into buf (always terminated when n > 0); "" when the report has nothing to say. Returns the
 * length of the whole verdict, as snprintf does. */
size_t trc_report_verdict(const trc_report_t *rep, char *buf, size_t n);
/* The largest source text --by-line reads (64 MiB: far beyond any kernel's source). */
#define TRC_REPORT_MAX_SOURCE_BYTES (64ull << 20)
/* The source text of each profiled line into lines[].text. SOURCE non-NULL: that file, which
 * the user named (--source). Otherwise the recorded program name is data, never opened as
 * written: only its last component, beside the file the report was read from (rep->source),
 * as a regular file of bounded size and not a symbolic link; for a .nca whose `.source`
 * names another file, that name's last component beside it too. Every open goes through
 * isa_file_open_data. 0: texts read; 1: none found (WHY says why, for a note); -1: SOURCE
 * cannot be read (WHY says why). */
int trc_report_line_texts(trc_report_t *rep, const char *source, char *why, size_t whylen);
/* The per-line profile: as a table (top `limit` lines, 0 for all), CSV, or JSON (malloc'd). */
void trc_report_print_lines(FILE *out, const trc_report_t *rep, size_t limit);
void trc_report_print_lines_csv(FILE *out, const trc_report_t *rep);
char *trc_report_lines_json(const trc_report_t *rep);
void trc_report_note(trc_report_t *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sort stalls (largest first) and kinds; call once the lists are complete. */
void trc_report_finish(trc_report_t *rep);

void trc_report_print(FILE *out, const trc_report_t *rep);
/* The report as JSON text (malloc'd, ends with a newline); NULL when out of memory. */
char *trc_report_json(const trc_report_t *rep);
void trc_report_free(trc_report_t *rep);

#endif
