/*
 * trace_sink.c -- sim_trace_sink_t on top of traces/ (the only file of sim/ that builds
 * trace records; traces/ knows nothing of the simulator).
 *
 * What a trace holds (docs/traces.md): a process per core ("chip C core K") with a track
 * per engine and per DMA queue, a process per chip for HBM, and one per chip for its
 * NeuronLinks. Each instruction is a slice lasting its initiation interval, with its
 * operands, latency, bytes, FLOPs and the time it was held by cause; each DMA transfer is a slice on its queue. Counters: semaphore
 * values, SBUF/PSUM bytes of declared tensors live (first write to last read), DMA bytes in flight and DMA
 * bandwidth per core, HBM bandwidth per chip. Flows: from the post that released a wait to
 * the instruction that waited, and from a dma instruction to its transfer.
 *
 * Which post released a wait: the engine records the last semaphore each instruction was
 * blocked on; the sink remembers, per core and semaphore, the last post (the posting
 * instruction's slice, or the DMA transfer's). Posts of an instruction fire at its
 * completion, after its record, so each engine keeps a short FIFO of its posting
 * instructions until their posts arrive.
 *
 * Counters are written in time order as the run goes: semaphore values, DMA in flight (up
 * when a dma instruction issues its transfer, down when the transfer lands), DMA and HBM
 * bandwidth (the bandwidth model's exact rates as they change), each holding back its value
 * until the time moves on so that one value is written per instant. What is only known later
 * is written when the trace is closed, from +/- steps sorted by time: NeuronLink bandwidth
 * (each chunk's average rate over its time on the link, known when it lands) and SBUF/PSUM in
 * use (a tensor's last read is known at the end).
 *
 * Collectives (sim/cc.c reports steps and the chunks moving in them): each step is a slice on
 * the "cc steps" track of every member core, with what the member sent, the chunk that ended
 * the step and the step's bottleneck (the resource busiest during its data phase); each chunk
 * crossing a NeuronLink is a slice on that link's track in the sending chip's "chip C links"
 * process, on the first free lane of the link (overlapping chunks get lanes of their own, so
 * slices never overlap on a track); links get bandwidth counters like DMA and HBM.
 */
#include "trace_sink.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "dis.h"
#include "trace.h"
#include "ncsim.h"

/* A counter track with the --trace-start window applied: values before the window are
 * held and written at its start. */
typedef struct series {
    uint32_t pid;
    const char *name, *unit;
    int pending;
    double pending_value;
    int written;       /* a value was written: `last` holds it */
    double last;
} series_t;

typedef struct poster {
    uint32_t index;
    uint64_t start_ps;
    uint8_t included;
} poster_t;

typedef struct fifo {
    poster_t *p;
    uint32_t head, n, cap;
} fifo_t;

typedef struct last_post {
    uint8_t valid, included;
    uint32_t tid;
    uint64_t ts_ps;
} last_post_t;

/* A live series' value at its latest instant, written when a later instant comes. */
typedef struct held {
    uint64_t t;
    double v;
    int have;
} held_t;

typedef struct delta {
    uint64_t t;
    uint64_t seq;   /* insertion order: a deterministic tie-break */
    double v;
    uint32_t series; /* index into the delta series table */
    int32_t active;  /* +1 / -1 transfers (bandwidth series), 0 otherwise */
} delta_t;

/* When an on-chip tensor of a core is live: from its first write to its last read. */
typedef struct tensor_live {
    uint8_t seen, written, read;
    uint64_t first_access, first_write; /* start times */
    uint64_t last_access, last_read;    /* completion times */
} tensor_live_t;

enum { VIEW_UNKNOWN = -1, VIEW_NONE = -2, VIEW_MANY = -3 };

typedef struct core_trace {
    uint32_t pid;
    int cc_track;             /* its "cc steps" track is written */
    uint64_t queues_declared; /* bit per DMA queue track written */
    fifo_t posters[ISA_ENGINE_COUNT];
    last_post_t last_post[ISA_MAX_SEMS];
    last_post_t last_dma;
    series_t sem[ISA_MAX_SEMS];
    char *sem_name[ISA_MAX_SEMS];
    char *clause_name[ISA_MAX_SEMS]; /* as the disassembler prints it in clauses */
    uint16_t clause_len[ISA_MAX_SEMS];
    /* live SBUF/PSUM (the "in use" counters): per program view the tensor it lies in
     * (VIEW_UNKNOWN until first seen, VIEW_NONE: HBM or no tensor, VIEW_MANY: several), and
     * per tensor its first write, first and last access and last read, written as deltas at
     * close */
    int32_t *view_tensor;
    tensor_live_t *live;
} core_trace_t;

/* Series built from deltas at close: per core DMA in flight, DMA bandwidth, SBUF and PSUM in
 * use, per chip HBM bandwidth. */
enum { DS_INFLIGHT, DS_DMA_BW, DS_SBUF, DS_PSUM, DS_PER_CORE };

/* Operand text cache: instructions unrolled from loops repeat the same operands, and the
 * disassembler's view naming is the dominant cost of tracing without it. Keyed by core,
 * opcode and operand contents (not the wait/post clauses, which the sink appends). */
typedef struct op_entry {
    uint64_t hash;
    const isa_instr_t *instr; /* the first instruction with these operands */
    uint32_t core;
    char *text;               /* operands without the mnemonic */
} op_entry_t;

#define OP_CACHE_SIZE (1u << 15)

/* In front of it, a direct-mapped cache by operand block: the assembler shares one block
 * among instructions with the same operands, so this finds most texts without hashing. */
typedef struct op_fast {
    const char *text; /* in the cache above; NULL: empty */
    uint32_t core, args;
    uint16_t op;
    uint8_t engine;
} op_fast_t;

#define OP_FAST_SIZE 4096u

/* Cost breakdown texts, direct-mapped by what the cost depends on: the operand block, the
 * opcode and engine, the loaded weights' columns and the charged II when the simulator
 * shortened it (background ldweights). */
typedef struct cost_entry {
    char *text;
    uint32_t args, stationary_cols;
    uint16_t op;
    uint8_t engine;
    uint64_t ii_ps; /* 0 when the model's II was charged */
} cost_entry_t;

#define COST_CACHE_SIZE 4096u

/* Operand templates (trc_slice_t.operands_tmpl): an instruction's operands with its clauses,
 * each clause number a '#', direct-mapped by the operand text and the clauses' shape (which
 * semaphores, which operators, whether a post prints its value). */
typedef struct tmpl_entry {
    const char *ops; /* the operand text (op cache) it was made from */
    uint64_t shape;
    uint32_t core;
    uint8_t none;    /* no template: the text holds a '#' of its own */
    char *text;
} tmpl_entry_t;

#define TMPL_CACHE_SIZE 4096u

/* What the sink made of an operand block (isa_instr_t.args: the assembler gives instructions
 * with the same operands one block, so loop iterations share it), found by the block's index
 * rather than by hashing: its operand text, its last template (with the clauses' shape it was
 * made for) and its last cost breakdown (with what else the cost depends on). The texts live
 * in the caches above until close. A block used by several (core, op, engine) has an entry
 * for each, chained. */
typedef struct block_memo {
    uint32_t next; /* the next entry of the block, 1-based; 0: none */
    uint32_t core;
    uint16_t op;
    uint8_t engine;
    uint8_t tmpl_state; /* 0: not known, 1: tmpl, 2: no template */
    const char *ops;    /* NULL: not known */
    const char *tmpl;
    uint64_t shape;
    const char *cost;   /* NULL: not known */
    uint32_t stationary_cols;
    uint64_t cost_ii;
} block_memo_t;

/* A directed NeuronLink: its track lanes (chunks that overlap in time go on separate lanes,
 * so slices never overlap on a track) and its bandwidth series. */
typedef struct link_trace {
    int used;
    uint32_t from, to;  /* chips */
    double gbps;        /* capacity */
    uint32_t series;    /* index into dseries */
    uint32_t nlanes;
    uint8_t *lane_busy;
    uint32_t *lane_tid; /* 0: its track is not written yet */
    char *series_name;  /* "link C->D bandwidth" */
} link_trace_t;

/* A resource's use during a collective step: bytes carried (weights included). */
typedef struct res_use {
    uint8_t kind;
    uint32_t id, from, to;
    double gbps;
    double bytes;
} res_use_t;

/* A chunk in the current step (per send), or a member's chunks together (per member: from
 * the first start to the last landing). */
typedef struct chunk {
    uint64_t start, end;
    uint64_t bytes;
    uint8_t moving, done;
    uint8_t nlinks;
    uint32_t link[SIM_TRACE_MAX_RES], lane[SIM_TRACE_MAX_RES];
} chunk_t;

/* A collective in progress: the state of its current step. */
typedef struct coll_trace {
    uint64_t id;
    uint32_t n;
    uint64_t go;          /* the step's chunks started moving (0: none yet) */
    int have_go;
    chunk_t *m;           /* per member */
    chunk_t *ch;          /* per send of the step */
    uint32_t cap_ch;
    res_use_t *res;
    size_t nres, cap_res;
    uint32_t slow_from, slow_to; /* the chunk that landed last */
    int have_slow;
    char bottleneck[48];
    double bottleneck_pct;
} coll_trace_t;

struct sim_trace_file {
    sim_trace_sink_t sink;
    op_entry_t *ops;          /* OP_CACHE_SIZE entries */
    op_fast_t *fast;          /* OP_FAST_SIZE entries */
    cost_entry_t *costs;      /* COST_CACHE_SIZE entries */
    tmpl_entry_t *tmpls;      /* TMPL_CACHE_SIZE entries */
    char vals[64];            /* the numbers of the last template's clauses */
    uint32_t nops;
    sim_trace_options_t opt;
    uint32_t engines;
    const isa_program_t *prog;
    const mdl_arch_t *arch;
    trc_writer_t *w;
    ncsim_status_t status;
    char err[512];
    uint64_t next_flow;
    uint32_t ncores, nchips;
    core_trace_t *cores;
    series_t *dseries; /* ncores * DS_PER_CORE, then nchips HBM */
    held_t *held;      /* DMA in flight, DMA and HBM bandwidth: the value of the current instant */
    uint32_t ndseries;
    delta_t *deltas;
    size_t ndeltas, cap_deltas;
    /* collectives */
    link_trace_t *links;  /* by the simulator's directed link index */
    uint32_t nlinks;
    uint8_t *links_declared;   /* per chip: its "chip C links" process is written */
    uint32_t *links_next_tid;  /* per chip: next local track number of that process */
    coll_trace_t **colls; /* in progress */
    size_t ncolls, cap_colls;
    char text[2048];
    /* texts of the caches above replaced while the trace is open: records are `stable`
     * (trc_slice_t), so they live until it closes */
    char **retired;
    size_t nretired, cap_retired;
    uint32_t *block_first; /* per prog->args slot: its first block_memo (1-based), 0: none */
    block_memo_t *blocks;
    uint32_t nblocks, cap_blocks;
};

/* trace.h's limited_* fields follow sim_dma_limit_t */
#define XX(member, name) +1
_Static_assert(SIM_DMA_LIMIT_COUNT == 0 TRC_DMA_LIMIT_MAP(XX), "TRC_DMA_LIMIT_MAP");
#undef XX

static const char *const stall_names[SIM_STALL_COUNT] = {"none", "semaphore", "port",
                                                         "interlock", "collective"};

/* round(x), half away from zero, without the library call (several per transfer): below
 * 2^52 in magnitude x - trunc(x) is exact, so the result is round's to the bit. */
static inline double round_exact(double x)
{
    if (!(x > -4e15 && x < 4e15))
        return round(x); /* large, infinite or NaN */
    double t = (double)(int64_t)x, d = x - t;
    /* copysign: round(-0.3) is -0.0, as the text of the value shows */
    return d >= 0.5 ? t + 1.0 : d <= -0.5 ? t - 1.0 : copysign(t, x);
}

/* Bandwidth in GB/s rounded to 1 MB/s: counters and arguments read as plain decimals. */
static double round_gbps(double v)
{
    return round_exact(v * 1000.0) / 1000.0;
}

/* ---- writing ------------------------------------------------------------------------------------- */

static void put(sim_trace_file_t *t, const trc_record_t *r)
{
    if (t->status != NCSIM_OK)
        return;
    ncsim_status_t st = trc_write(t->w, r);
    if (st != NCSIM_OK) {
        t->status = st;
        const char *why = trc_writer_error(t->w);
        snprintf(t->err, sizeof t->err, "cannot write the trace %s: %s", t->opt.path,
                 st == NCSIM_IO ? (why[0] ? why : "write error") : ncsim_status_text(st));
    }
}

static void fail(sim_trace_file_t *t, ncsim_status_t st, const char *msg)
{
    if (t->status == NCSIM_OK) {
        t->status = st;
        snprintf(t->err, sizeof t->err, "trace %s: %s", t->opt.path, msg);
    }
}

/* A cache text replaced: kept until the trace closes (the writer may know it by address). */
static void retire(sim_trace_file_t *t, char *text)
{
    if (!text)
        return;
    if (t->nretired == t->cap_retired) {
        size_t cap = t->cap_retired ? t->cap_retired * 2 : 64;
        char **p = realloc(t->retired, cap * sizeof *p);
        if (!p) {
            fail(t, NCSIM_NOMEM, "out of memory");
            return; /* leaked rather than freed under the writer */
        }
        t->retired = p;
        t->cap_retired = cap;
    }
    t->retired[t->nretired++] = text;
}

static inline void counter_emit(sim_trace_file_t *t, series_t *s, uint64_t ts, double v)
{
    if (s->written && s->last == v)
        return; /* a counter holds its value until the next one */
    s->written = 1;
    s->last = v;
    /* only the counter member is set (and read): the record's union is a few hundred bytes
     * and there are several counter values per instruction */
    trc_record_t r;
    r.kind = TRC_REC_COUNTER;
    r.u.counter = (trc_counter_t){s->pid, s->name, s->unit, ts, v, 1};
    put(t, &r);
}

static inline void series_set(sim_trace_file_t *t, series_t *s, uint64_t ts, double v)
{
    if (ts < t->opt.start_ps) {
        s->pending = 1;
        s->pending_value = v;
        return;
    }
    if (t->opt.end_ps && ts > t->opt.end_ps)
        return;
    if (s->pending) {
        s->pending = 0;
        if (ts > t->opt.start_ps)
            counter_emit(t, s, t->opt.start_ps, s->pending_value);
    }
    counter_emit(t, s, ts, v);
}

static void series_flush(sim_trace_file_t *t, series_t *s)
{
    if (s->pending) {
        s->pending = 0;
        counter_emit(t, s, t->opt.start_ps, s->pending_value);
    }
}

static int in_window(const sim_trace_file_t *t, uint64_t from, uint64_t to)
{
    return to >= t->opt.start_ps && (!t->opt.end_ps || from <= t->opt.end_ps);
}

static void write_track(sim_trace_file_t *t, uint32_t pid, uint32_t tid, const char *name,
                        int32_t sort)
{
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_TRACK;
    r.u.track.pid = pid;
    r.u.track.tid = tid;
    r.u.track.name = name;
    r.u.track.sort_index = sort;
    put(t, &r);
}

static void write_flow(sim_trace_file_t *t, const char *cat, const char *name, uint32_t pid,
                       uint32_t from_tid, uint64_t from_ts, uint32_t to_tid, uint64_t to_ts)
{
    trc_record_t r; /* only the flow member is set, as in counter_emit */
    r.kind = TRC_REC_FLOW;
    /* cat: a literal, name: a literal or a semaphore's name, kept until close */
    r.u.flow =
        (trc_flow_t){++t->next_flow, cat, name, pid, from_tid, from_ts, pid, to_tid, to_ts, 1};
    put(t, &r);
}

/* Series `sid` (DMA in flight, DMA or HBM bandwidth) has value v from `time` on: the value
 * held for the previous instant is written when the time moves on (the simulator reports in
 * time order; a series starts at 0 at time 0). */
static void live_set(sim_trace_file_t *t, uint32_t sid, uint64_t time, double v)
{
    held_t *h = &t->held[sid];
    series_t *s = &t->dseries[sid];
    if (!h->have) {
        h->have = 1;
        if (time > 0)
            series_set(t, s, 0, 0);
    } else if (time > h->t) {
        series_set(t, s, h->t, h->v);
    } else {
        time = h->t; /* never earlier than the last report */
    }
    h->t = time;
    h->v = v;
}

static void live_flush(sim_trace_file_t *t)
{
    for (uint32_t sid = 0; sid < t->ncores * DS_PER_CORE + t->nchips; sid++) {
        held_t *h = &t->held[sid];
        if (!h->have)
            continue;
        series_set(t, &t->dseries[sid], h->t, h->v);
        series_flush(t, &t->dseries[sid]);
        h->have = 0;
    }
}

static void add_delta(sim_trace_file_t *t, uint32_t series, uint64_t time, double v, int active)
{
    if (t->ndeltas == t->cap_deltas) {
        size_t cap = t->cap_deltas ? t->cap_deltas * 2 : 1024;
        delta_t *d = realloc(t->deltas, cap * sizeof *d);
        if (!d) {
            fail(t, NCSIM_NOMEM, "out of memory");
            return;
        }
        t->deltas = d;
        t->cap_deltas = cap;
    }
    delta_t *d = &t->deltas[t->ndeltas];
    d->t = time;
    d->seq = t->ndeltas++;
    d->v = v;
    d->series = series;
    d->active = active;
}

/* ---- posters ----------------------------------------------------------------------------------- */

static int fifo_push(fifo_t *f, const poster_t *p)
{
    if (f->n == f->cap) {
        uint32_t cap = f->cap ? f->cap * 2 : 16;
        poster_t *q = malloc(cap * sizeof *q);
        if (!q)
            return -1;
        for (uint32_t i = 0; i < f->n; i++)
            q[i] = f->p[(f->head + i) % f->cap];
        free(f->p);
        f->p = q;
        f->cap = cap;
        f->head = 0;
    }
    f->p[(f->head + f->n) % f->cap] = *p;
    f->n++;
    return 0;
}

/* The posting instruction `index`: drop the ones before it (their posts are done). */
static const poster_t *fifo_find(fifo_t *f, uint32_t index)
{
    while (f->n && f->p[f->head].index < index) {
        f->head = (f->head + 1) % f->cap;
        f->n--;
    }
    return f->n && f->p[f->head].index == index ? &f->p[f->head] : NULL;
}

/* ---- SBUF / PSUM in use ------------------------------------------------------------------------ */

static uint64_t tensor_bytes_per_partition(const isa_tensor_t *T)
{
    uint64_t n = isa_dtype_size((isa_dtype_t)T->dtype);
    for (unsigned d = 1; d < T->ndims; d++)
        n *= T->dims[d];
    return n;
}

/* Does view v overlap tensor T (declared for `core`)? */
static int view_in_tensor(const isa_view_t *v, const isa_tensor_t *T, uint32_t core)
{
    if (T->space != v->space || (T->core != -1 && (uint32_t)T->core != core) || !T->ndims)
        return 0;
    int64_t lo, hi;
    isa_view_byte_range(v, &lo, &hi);
    uint32_t p0 = v->pstart, p1 = (uint32_t)v->pstart + v->pcount;
    uint64_t bpp = tensor_bytes_per_partition(T);
    uint64_t tp0 = T->pstart, tp1 = T->pstart + T->dims[0];
    return !(p0 >= tp1 || tp0 >= p1 || hi <= (int64_t)T->offset ||
             lo >= (int64_t)(T->offset + bpp));
}

static void live_mark(tensor_live_t *L, int write, uint64_t start, uint64_t end)
{
    if (!L->seen || start < L->first_access)
        L->first_access = start;
    if (!L->seen || end > L->last_access)
        L->last_access = end;
    L->seen = 1;
    if (write && (!L->written || start < L->first_write)) {
        L->first_write = start;
        L->written = 1;
    }
    if (!write && (!L->read || end > L->last_read)) {
        L->last_read = end;
        L->read = 1;
    }
}

/* An access [start, end) to view vi of `core`: the live ranges of the tensors under it. The
 * tensor of a view is found once per core (most views lie in one tensor). */
static void touch_view(sim_trace_file_t *t, core_trace_t *ct, uint32_t core, uint32_t vi,
                       int write, uint64_t start, uint64_t end)
{
    int32_t k = ct->view_tensor[vi];
    if (k == VIEW_NONE)
        return;
    const isa_view_t *v = &t->prog->views[vi];
    if (k == VIEW_UNKNOWN) {
        k = VIEW_NONE;
        if (v->space != ISA_SPACE_HBM)
            for (uint32_t j = 0; j < t->prog->ntensors; j++)
                if (view_in_tensor(v, &t->prog->tensors[j], core))
                    k = k == VIEW_NONE ? (int32_t)j : VIEW_MANY;
        ct->view_tensor[vi] = k;
        if (k == VIEW_NONE)
            return;
    }
    if (k >= 0) {
        live_mark(&ct->live[k], write, start, end);
        return;
    }
    for (uint32_t j = 0; j < t->prog->ntensors; j++)
        if (view_in_tensor(v, &t->prog->tensors[j], core))
            live_mark(&ct->live[j], write, start, end);
}

/* Which operand slots an instruction writes (the others it reads): its destination, and
 * activate's sum=/sumacc=; ldweights only reads; matmul with acc and sumacc= read too. */
static void slot_access(int op, unsigned slot, const isa_arg_t *args, int *reads, int *writes)
{
    *writes = slot == 0 && op != ISA_OP_LDWEIGHTS;
    *reads = !*writes;
    if (op == ISA_OP_ACTIVATE && (slot == 5 || slot == 6)) {
        *writes = 1;
        *reads = slot == 6;
    }
    if (op == ISA_OP_MATMUL && slot == 0 && args[2].present)
        *reads = 1;
}

static void touch_instr(sim_trace_file_t *t, core_trace_t *ct, uint32_t core,
                        const isa_instr_t *in, uint64_t start, uint64_t end)
{
    const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
    const isa_arg_t *args = isa_instr_args(t->prog, in);
    for (unsigned k = 0; k < info->nslots; k++) {
        if (!args[k].present || !args[k].is_view)
            continue;
        int r, w;
        slot_access(in->op, k, args, &r, &w);
        if (w)
            touch_view(t, ct, core, args[k].index, 1, start, end);
        if (r)
            touch_view(t, ct, core, args[k].index, 0, start, end);
    }
}

/* At close: each tensor's live range as +bytes / -bytes deltas of its core's series. */
static void live_deltas(sim_trace_file_t *t)
{
    for (uint32_t c = 0; c < t->ncores; c++) {
        core_trace_t *ct = &t->cores[c];
        if (!ct->live)
            continue;
        for (uint32_t k = 0; k < t->prog->ntensors; k++) {
            const tensor_live_t *L = &ct->live[k];
            const isa_tensor_t *T = &t->prog->tensors[k];
            if (!L->seen || T->space == ISA_SPACE_HBM)
                continue;
            uint64_t from = L->written ? L->first_write : L->first_access;
            uint64_t to = L->read ? L->last_read : L->last_access;
            if (to < from)
                to = from; /* read only before its first write: live for an instant */
            double bytes = (double)(tensor_bytes_per_partition(T) * T->dims[0]);
            uint32_t sid = c * DS_PER_CORE + (T->space == ISA_SPACE_SBUF ? DS_SBUF : DS_PSUM);
            add_delta(t, sid, from, bytes, 0);
            add_delta(t, sid, to, -bytes, 0);
        }
    }
}

/* ---- operand text -------------------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t view_hash(uint64_t h, const isa_view_t *v)
{
    h = mix(h, (uint64_t)v->space | (uint64_t)v->dtype << 8 | (uint64_t)v->ndims << 16 |
                   (uint64_t)v->pstart << 24 | (uint64_t)v->pcount << 32);
    h = mix(h, v->offset);
    for (unsigned d = 0; d < v->ndims && d < ISA_MAX_DIMS; d++)
        h = mix(h, (uint64_t)v->stride[d] ^ ((uint64_t)v->count[d] << 40));
    return h;
}

/* Hash of what the disassembler prints for the operands of `in`. */
static uint64_t operands_hash(const isa_program_t *p, uint32_t core, const isa_instr_t *in)
{
    const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
    const isa_arg_t *a = isa_instr_args(p, in);
    uint64_t h = mix(core, in->op);
    for (unsigned k = 0; k < info->nslots; k++) {
        h = mix(h, (uint64_t)a[k].present | (uint64_t)a[k].is_view << 8 |
                       (uint64_t)a[k].count << 16);
        if (!a[k].present)
            continue;
        if (a[k].is_view) {
            h = view_hash(h, &p->views[a[k].index]);
        } else if (info->slots[k].kind == ISA_KIND_LIST) {
            for (unsigned j = 0; j < a[k].count; j++)
                h = mix(h, (uint64_t)p->ints[a[k].index + j]);
        } else {
            uint64_t bits;
            memcpy(&bits, &a[k].v, sizeof bits);
            h = mix(h, bits);
        }
    }
    return h;
}

static int operands_equal(const isa_program_t *p, const isa_instr_t *x, const isa_instr_t *y)
{
    if (x->op != y->op)
        return 0;
    const isa_op_info_t *info = isa_op_info((isa_op_t)x->op);
    const isa_arg_t *a = isa_instr_args(p, x), *b = isa_instr_args(p, y);
    for (unsigned k = 0; k < info->nslots; k++) {
        if (a[k].present != b[k].present || a[k].is_view != b[k].is_view ||
            a[k].count != b[k].count)
            return 0;
        if (!a[k].present)
            continue;
        if (a[k].is_view) {
            if (!isa_view_equal(&p->views[a[k].index], &p->views[b[k].index]))
                return 0;
        } else if (info->slots[k].kind == ISA_KIND_LIST) {
            if (memcmp(&p->ints[a[k].index], &p->ints[b[k].index],
                       a[k].count * sizeof *p->ints) != 0)
                return 0;
        } else if (memcmp(&a[k].v, &b[k].v, sizeof a[k].v) != 0) {
            return 0;
        }
    }
    return 1;
}

/* The memo of `in`'s operand block on `core` (made empty when new); NULL when the program
 * has no blocks or out of memory. The pointer is valid until the next new entry. */
static block_memo_t *block_memo(sim_trace_file_t *t, uint32_t core, const isa_instr_t *in)
{
    if (!t->block_first || in->args >= t->prog->nargs)
        return NULL;
    for (uint32_t k = t->block_first[in->args]; k; k = t->blocks[k - 1].next) {
        block_memo_t *b = &t->blocks[k - 1];
        if (b->core == core && b->op == in->op && b->engine == in->engine)
            return b;
    }
    if (t->nblocks == t->cap_blocks) {
        if (t->cap_blocks >= UINT32_MAX / 2)
            return NULL;
        uint32_t cap = t->cap_blocks ? t->cap_blocks * 2 : 256;
        block_memo_t *p = realloc(t->blocks, cap * sizeof *p);
        if (!p)
            return NULL; /* the hashed caches still work */
        t->blocks = p;
        t->cap_blocks = cap;
    }
    block_memo_t *b = &t->blocks[t->nblocks++];
    memset(b, 0, sizeof *b);
    b->core = core;
    b->op = in->op;
    b->engine = in->engine;
    b->next = t->block_first[in->args];
    t->block_first[in->args] = t->nblocks;
    return b;
}

/* The operands of `in` as the disassembler prints them, without the mnemonic and without
 * the wait/post clauses, from the caches by hash (operands_text looks at the block first). */
static const char *operands_text_hashed(sim_trace_file_t *t, uint32_t core,
                                        const isa_instr_t *in)
{
    op_fast_t *fe = &t->fast[(in->args * 2654435761u ^ core * 40503u ^ in->op) &
                             (OP_FAST_SIZE - 1)];
    if (fe->text && fe->args == in->args && fe->core == core && fe->op == in->op &&
        fe->engine == in->engine)
        return fe->text;
    uint64_t h = operands_hash(t->prog, core, in);
    uint32_t j = (uint32_t)h & (OP_CACHE_SIZE - 1);
    while (t->ops[j].text) {
        op_entry_t *e = &t->ops[j];
        if (e->hash == h && e->core == core && operands_equal(t->prog, e->instr, in)) {
            *fe = (op_fast_t){e->text, core, in->args, in->op, in->engine};
            return e->text;
        }
        j = (j + 1) & (OP_CACHE_SIZE - 1);
    }
    isa_instr_t bare = *in;
    bare.nwait = bare.npost = 0;
    isa_format_instr(t->prog, core, &bare, t->text, sizeof t->text);
    const char *text = t->text;
    size_t skip = strlen(isa_op_info((isa_op_t)in->op)->mnemonic);
    text += strncmp(text, isa_op_info((isa_op_t)in->op)->mnemonic, skip) == 0 ? skip : 0;
    if (*text == ' ')
        text++;
    if (t->nops * 4 >= OP_CACHE_SIZE * 3) {
        /* full: start again (programs with this many distinct operand sets are rare) */
        for (uint32_t k = 0; k < OP_CACHE_SIZE; k++) {
            retire(t, t->ops[k].text);
            t->ops[k].text = NULL;
        }
        memset(t->fast, 0, OP_FAST_SIZE * sizeof *t->fast);
        t->nops = 0;
        j = (uint32_t)h & (OP_CACHE_SIZE - 1);
    }
    char *copy = strdup(text);
    if (!copy)
        return text; /* t->text: valid until the next call */
    t->ops[j].hash = h;
    t->ops[j].core = core;
    t->ops[j].instr = in;
    t->ops[j].text = copy;
    t->nops++;
    *fe = (op_fast_t){copy, core, in->args, in->op, in->engine};
    return copy;
}

/* The operands of `in` as the disassembler prints them, without the mnemonic and without
 * the wait/post clauses. */
static const char *operands_text(sim_trace_file_t *t, uint32_t core, const isa_instr_t *in)
{
    block_memo_t *b = block_memo(t, core, in);
    if (b && b->ops)
        return b->ops;
    const char *text = operands_text_hashed(t, core, in);
    if (b && text != t->text)
        b->ops = text; /* cached until close */
    return text;
}

/* v in decimal at p; returns the characters written (at most 11). Two digits at a time,
 * straight into place (clause numbers: one or two per traced instruction). */
static size_t put_int(char *p, int32_t v)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                                "34353637383940414243444546474849505152535455565758596061626364656667"
                                "6869707172737475767778798081828384858687888990919293949596979899";
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    size_t k = 0;
    if (v < 0)
        p[k++] = '-';
    size_t n = 1;
    for (uint32_t x = u; x >= 10; x /= 10)
        n++;
    char *e = p + k + n;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100) * 2;
        u /= 100;
        *--e = pairs[r + 1];
        *--e = pairs[r];
    }
    if (u >= 10) {
        *--e = pairs[u * 2 + 1];
        *--e = pairs[u * 2];
    } else {
        *--e = (char)('0' + u);
    }
    return k + n;
}

/* " OP VALUE" without printf (this runs for every traced instruction with clauses). */
static void op_value(char *buf, const char *op, int32_t value)
{
    size_t k = 0;
    buf[k++] = ' ';
    while (*op)
        buf[k++] = *op++;
    buf[k++] = ' ';
    k += put_int(buf + k, value);
    buf[k] = '\0';
}

static size_t append_n(char *buf, size_t at, size_t cap, const char *s, size_t n)
{
    if (at + n >= cap)
        n = at < cap - 1 ? cap - 1 - at : 0;
    memmove(buf + at, s, n); /* s may lie in buf (operands_text's fallback) */
    buf[at + n] = '\0';
    return at + n;
}

static size_t append(char *buf, size_t at, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (at + n >= cap)
        n = at < cap - 1 ? cap - 1 - at : 0;
    memmove(buf + at, s, n); /* s may lie in buf (operands_text's fallback) */
    buf[at + n] = '\0';
    return at + n;
}

/* Operands and clauses of `in` into t->text, as `ncsim dis` prints them (mnemonic apart). */
static const char *instr_text(sim_trace_file_t *t, uint32_t core, const isa_instr_t *in)
{
    const char *ops = operands_text(t, core, in);
    if (!in->nwait && !in->npost)
        return ops;
    core_trace_t *ct = &t->cores[core];
    char num[32];
    size_t at = 0;
    if (ops != t->text)
        at = append(t->text, 0, sizeof t->text, ops);
    else
        at = strlen(t->text);
    for (unsigned k = 0; k < in->nwait && k < ISA_MAX_WAITS; k++) {
        at = append_n(t->text, at, sizeof t->text, " | wait ", 8);
        at = append_n(t->text, at, sizeof t->text, ct->clause_name[in->wait[k].sem],
                      ct->clause_len[in->wait[k].sem]);
        op_value(num, in->wait[k].op == ISA_WAIT_EQ ? "==" : ">=", in->wait[k].value);
        at = append(t->text, at, sizeof t->text, num);
    }
    for (unsigned k = 0; k < in->npost && k < ISA_MAX_POSTS; k++) {
        const isa_sync_t *sp = &in->post[k];
        at = append_n(t->text, at, sizeof t->text, " | post ", 8);
        at = append_n(t->text, at, sizeof t->text, ct->clause_name[sp->sem],
                      ct->clause_len[sp->sem]);
        if (sp->op == ISA_POST_ADD && sp->value == 1)
            continue;
        op_value(num, sp->op == ISA_POST_SUB ? "-=" : sp->op == ISA_POST_SET ? "=" : "+=",
                 sp->value);
        at = append(t->text, at, sizeof t->text, num);
    }
    return t->text;
}

/* The clauses' shape of `in`: what its template depends on besides the operand text. */
static uint64_t clause_shape(const isa_instr_t *in)
{
    uint64_t k = (uint64_t)in->nwait | (uint64_t)in->npost << 2;
    unsigned b = 4;
    for (unsigned i = 0; i < in->nwait && i < ISA_MAX_WAITS; i++, b += 8)
        k |= (uint64_t)(in->wait[i].sem | (in->wait[i].op == ISA_WAIT_EQ) << 7) << b;
    for (unsigned i = 0; i < in->npost && i < ISA_MAX_POSTS; i++, b += 16) {
        const isa_sync_t *p = &in->post[i];
        uint64_t bare = p->op == ISA_POST_ADD && p->value == 1;
        k |= (uint64_t)(p->sem | (uint64_t)p->op << 8 | bare << 12) << b;
    }
    return k;
}

/* The numbers of `in`'s clauses as instr_text prints them, space-separated, into t->vals
 * (room for all: at most ISA_MAX_WAITS + ISA_MAX_POSTS numbers of 12 characters). */
static void clause_values(sim_trace_file_t *t, const isa_instr_t *in)
{
    _Static_assert(sizeof t->vals >= (ISA_MAX_WAITS + ISA_MAX_POSTS) * 12 + 1, "vals");
    size_t at = 0;
    for (unsigned k = 0; k < in->nwait && k < ISA_MAX_WAITS; k++) {
        if (at)
            t->vals[at++] = ' ';
        at += put_int(t->vals + at, in->wait[k].value);
    }
    for (unsigned k = 0; k < in->npost && k < ISA_MAX_POSTS; k++) {
        const isa_sync_t *sp = &in->post[k];
        if (sp->op == ISA_POST_ADD && sp->value == 1)
            continue;
        if (at)
            t->vals[at++] = ' ';
        at += put_int(t->vals + at, sp->value);
    }
    t->vals[at] = '\0';
}

/* The operands of `in` as a template with its numbers in t->vals (trc_slice_t.operands_tmpl;
 * clauses without numbers: the text itself, values ""); NULL when it has no clauses or its
 * text holds a '#' (then instr_text is used). */
static const char *instr_template(sim_trace_file_t *t, uint32_t core, const isa_instr_t *in)
{
    if (!in->nwait && !in->npost)
        return NULL;
    uint64_t shape = clause_shape(in);
    block_memo_t *b = block_memo(t, core, in);
    if (b && b->tmpl_state && b->shape == shape) {
        if (b->tmpl_state == 2)
            return NULL;
        clause_values(t, in);
        return b->tmpl;
    }
    const char *ops = operands_text(t, core, in); /* finds b: no new entry */
    if (ops == t->text)
        return NULL; /* not cached (out of memory): the text path */
    uintptr_t h = (uintptr_t)ops;
    tmpl_entry_t *e = &t->tmpls[(h ^ (h >> 12) ^ shape * 0x9e3779b97f4a7c15ull ^ core * 40503u) &
                                (TMPL_CACHE_SIZE - 1)];
    if (!(e->ops == ops && e->shape == shape && e->core == core && (e->text || e->none))) {
        /* instr_text's clauses with '#' for each number */
        core_trace_t *ct = &t->cores[core];
        char buf[sizeof t->text];
        size_t at = append(buf, 0, sizeof buf, ops);
        for (unsigned k = 0; k < in->nwait && k < ISA_MAX_WAITS; k++) {
            at = append_n(buf, at, sizeof buf, " | wait ", 8);
            at = append_n(buf, at, sizeof buf, ct->clause_name[in->wait[k].sem],
                          ct->clause_len[in->wait[k].sem]);
            at = append(buf, at, sizeof buf, in->wait[k].op == ISA_WAIT_EQ ? " == #" : " >= #");
        }
        for (unsigned k = 0; k < in->npost && k < ISA_MAX_POSTS; k++) {
            const isa_sync_t *sp = &in->post[k];
            at = append_n(buf, at, sizeof buf, " | post ", 8);
            at = append_n(buf, at, sizeof buf, ct->clause_name[sp->sem],
                          ct->clause_len[sp->sem]);
            if (sp->op == ISA_POST_ADD && sp->value == 1)
                continue;
            at = append(buf, at, sizeof buf,
                        sp->op == ISA_POST_SUB   ? " -= #"
                        : sp->op == ISA_POST_SET ? " = #"
                                                 : " += #");
        }
        /* a '#' of the text's own would be taken for a number */
        size_t hashes = 0;
        for (const char *c = buf; *c; c++)
            hashes += *c == '#';
        unsigned numbers = 0;
        for (unsigned k = 0; k < in->nwait && k < ISA_MAX_WAITS; k++)
            numbers++;
        for (unsigned k = 0; k < in->npost && k < ISA_MAX_POSTS; k++)
            numbers += !(in->post[k].op == ISA_POST_ADD && in->post[k].value == 1);
        /* no numbers: the template is the text (values ""), which stays in this cache */
        int none = hashes != numbers || at + 1 >= sizeof buf;
        retire(t, e->text);
        *e = (tmpl_entry_t){ops, shape, core, (uint8_t)none, NULL};
        if (!none) {
            e->text = strdup(buf);
            if (!e->text) {
                e->none = 1;
                return NULL;
            }
        }
    }
    if (b) {
        b->shape = shape;
        b->tmpl_state = e->none ? 2 : 1;
        b->tmpl = e->text; /* kept until close */
    }
    if (e->none)
        return NULL;
    clause_values(t, in);
    return e->text;
}

/* The name the disassembler gives semaphore `sem` of `core` in clauses. */
static char *clause_name(const isa_program_t *p, uint32_t core, uint8_t sem)
{
    isa_instr_t nop;
    memset(&nop, 0, sizeof nop);
    nop.op = ISA_OP_NOP;
    nop.npost = 1;
    nop.post[0].sem = sem;
    nop.post[0].op = ISA_POST_ADD;
    nop.post[0].value = 1;
    char buf[256];
    isa_format_instr(p, core, &nop, buf, sizeof buf);
    const char *at = strstr(buf, "| post ");
    return strdup(at ? at + 7 : buf);
}

/* ---- cost breakdowns ----------------------------------------------------------------------------- */

static const char *cost_text_hashed(sim_trace_file_t *t, const sim_trace_instr_t *r,
                                    uint64_t shortened)
{
    const isa_instr_t *in = r->instr;
    cost_entry_t *e = &t->costs[(in->args * 2654435761u ^ r->stationary_cols * 40503u ^
                                 in->op * 977u ^ in->engine) &
                                (COST_CACHE_SIZE - 1)];
    if (e->text && e->args == in->args && e->op == in->op && e->engine == in->engine &&
        e->stationary_cols == r->stationary_cols && e->ii_ps == shortened)
        return e->text;
    char buf[1024];
    sim_explain_instr(t->arch, t->prog, r, NULL, buf, sizeof buf);
    char *copy = strdup(buf);
    if (!copy) {
        fail(t, NCSIM_NOMEM, "out of memory");
        return "";
    }
    retire(t, e->text);
    *e = (cost_entry_t){copy, in->args, r->stationary_cols, in->op, in->engine, shortened};
    return copy;
}

static const char *instr_cost_text(sim_trace_file_t *t, const sim_trace_instr_t *r)
{
    uint64_t shortened = r->ii_ps < r->model_ii_ps ? r->ii_ps : 0;
    block_memo_t *b = block_memo(t, r->core, r->instr);
    if (b && b->cost && b->stationary_cols == r->stationary_cols && b->cost_ii == shortened)
        return b->cost;
    const char *text = cost_text_hashed(t, r, shortened);
    if (b && *text) {
        b->cost = text; /* kept until close */
        b->stationary_cols = r->stationary_cols;
        b->cost_ii = shortened;
    }
    return text;
}

/* ---- hooks ---------------------------------------------------------------------------------------- */

static void on_instr(void *ctx, const sim_trace_instr_t *r)
{
    sim_trace_file_t *t = ctx;
    if (t->status != NCSIM_OK)
        return;
    core_trace_t *ct = &t->cores[r->core];
    const isa_instr_t *in = r->instr;
    uint32_t tid = trc_tid(ct->pid, TRC_TRACK_ENGINE, r->engine);
    int included = (t->engines >> r->engine & 1) &&
                   in_window(t, r->start_ps, r->start_ps + r->ii_ps);
    if (in->npost && in->op != ISA_OP_DMA) {
        poster_t p = {r->index, r->start_ps, (uint8_t)included};
        if (fifo_push(&ct->posters[r->engine], &p))
            fail(t, NCSIM_NOMEM, "out of memory");
    }
    touch_instr(t, ct, r->core, in, r->start_ps, r->end_ps);
    if (in->op == ISA_OP_DMA) {
        /* the transfer is issued now (dma.c): DMA in flight goes up by its bytes, and down
         * when on_dma reports it landed */
        const isa_arg_t *args = isa_instr_args(t->prog, in);
        mdl_dma_shape_t shape;
        mdl_dma_shape(&t->prog->views[args[0].index], &t->prog->views[args[1].index], &shape);
        uint32_t sid = r->core * DS_PER_CORE + DS_INFLIGHT;
        live_set(t, sid, r->start_ps, t->held[sid].v + (double)shape.bytes);
    }
    if (!included)
        return;
    const char *sem = NULL;
    if (r->stall_by[SIM_STALL_SEMAPHORE]) {
        sem = ct->sem_name[r->stall_sem];
        const last_post_t *lp = &ct->last_post[r->stall_sem];
        if (lp->valid && lp->included)
            write_flow(t, "semaphore", sem, ct->pid, lp->tid, lp->ts_ps, tid, r->start_ps);
    }
    int main_cause = 0;
    for (int k = 1; k < SIM_STALL_COUNT; k++)
        if (r->stall_by[k] > r->stall_by[main_cause])
            main_cause = k;
    /* "semaphore NAME" is the semaphore's counter name */
    const char *stall = main_cause == SIM_STALL_SEMAPHORE ? ct->sem[r->stall_sem].name
                        : main_cause                      ? stall_names[main_cause]
                                                          : "";
    const char *tmpl = instr_template(t, r->core, in);
    const char *text = tmpl ? tmpl : instr_text(t, r->core, in);
    /* the slice and its kind's member are set, not the whole record: there is one per
     * instruction and the record's union is a few hundred bytes */
    trc_record_t rec;
    rec.kind = TRC_REC_SLICE;
    trc_slice_t *s = &rec.u.slice;
    memset(s, 0, offsetof(trc_slice_t, a));
    memset(&s->a.instr, 0, sizeof s->a.instr);
    s->operands_tmpl = s->operand_values = NULL;
    s->kind = TRC_SLICE_INSTR;
    s->pid = ct->pid;
    s->tid = tid;
    s->ts_ps = r->start_ps;
    s->dur_ps = r->ii_ps;
    s->name = isa_op_info((isa_op_t)in->op)->mnemonic;
    trc_instr_args_t *a = &s->a.instr;
    a->index = r->index;
    a->line = in->line;
    a->operands = text;
    if (tmpl) {
        s->operands_tmpl = tmpl;
        s->operand_values = t->vals;
    }
    a->ii = r->ii_ps;
    a->latency = r->end_ps - r->start_ps;
    a->bytes = r->bytes;
    a->flops = r->flops;
    a->hw_flops = r->hw_flops;
    a->hw_flops_fp32 = r->hw_flops_fp32;
    a->sbuf_read = r->sbuf_read_bytes;
    a->sbuf_write = r->sbuf_write_bytes;
    a->psum_read = r->psum_read_bytes;
    a->psum_write = r->psum_write_bytes;
    a->wait = r->start_ps - r->ready_ps;
    a->wait_semaphore = r->stall_by[SIM_STALL_SEMAPHORE];
    a->wait_port = r->stall_by[SIM_STALL_PORT];
    a->wait_interlock = r->stall_by[SIM_STALL_INTERLOCK];
    a->wait_collective = r->stall_by[SIM_STALL_COLLECTIVE];
    a->semaphore = sem;
    a->stall = stall;
    a->cost = instr_cost_text(t, r);
    /* every string but an operand text built in t->text lives in a cache until close */
    s->stable = text != t->text;
    put(t, &rec);
}

static const char *space_name(int space)
{
    return space == ISA_SPACE_SBUF ? "sbuf" : space == ISA_SPACE_PSUM ? "psum" : "hbm";
}

/* "hbm->sbuf" and so on */
static const char *direction_name(int src, int dst)
{
    static const char *const names[3][3] = {{"sbuf->sbuf", "sbuf->psum", "sbuf->hbm"},
                                            {"psum->sbuf", "psum->psum", "psum->hbm"},
                                            {"hbm->sbuf", "hbm->psum", "hbm->hbm"}};
    int a = src == ISA_SPACE_SBUF ? 0 : src == ISA_SPACE_PSUM ? 1 : 2;
    int b = dst == ISA_SPACE_SBUF ? 0 : dst == ISA_SPACE_PSUM ? 1 : 2;
    return names[a][b];
}

static void on_dma(void *ctx, const sim_trace_dma_t *r)
{
    sim_trace_file_t *t = ctx;
    if (t->status != NCSIM_OK)
        return;
    core_trace_t *ct = &t->cores[r->core];
    const isa_arg_t *args = isa_instr_args(t->prog, r->instr);
    const isa_view_t *dst = &t->prog->views[args[0].index];
    const isa_view_t *src = &t->prog->views[args[1].index];
    uint32_t tid = trc_tid(ct->pid, TRC_TRACK_DMA_QUEUE, r->queue);
    int included = (t->engines & SIM_TRACE_DMA_BIT) && in_window(t, r->start_ps, r->end_ps);
    ct->last_dma.valid = 1;
    ct->last_dma.included = (uint8_t)included;
    ct->last_dma.tid = tid;
    ct->last_dma.ts_ps = r->start_ps;
    /* counters, written at close */
    uint64_t dur = r->end_ps > r->start_ps ? r->end_ps - r->start_ps : 1;
    double gbps = round_gbps((double)r->bytes / (double)dur * 1000.0); /* bytes/ps -> GB/s */
    uint32_t base = r->core * DS_PER_CORE;
    /* in flight since on_instr counted it up at the issue */
    held_t *fl = &t->held[base + DS_INFLIGHT];
    live_set(t, base + DS_INFLIGHT, r->end_ps, fl->v - (double)r->bytes);
    touch_view(t, ct, r->core, args[0].index, 1, r->start_ps, r->end_ps);
    touch_view(t, ct, r->core, args[1].index, 0, r->start_ps, r->end_ps);
    (void)gbps; /* DMA and HBM bandwidth counters come from on_bandwidth (exact rates) */
    (void)src;
    (void)dst;
    if (!included)
        return;
    if (!(ct->queues_declared >> r->queue & 1)) {
        ct->queues_declared |= 1ull << r->queue;
        char name[32];
        snprintf(name, sizeof name, "dma q%u", r->queue);
        write_track(t, ct->pid, tid, name, (int32_t)(100 + r->queue));
    }
    uint32_t issuer_tid = trc_tid(ct->pid, TRC_TRACK_ENGINE, r->issuing_engine);
    if ((t->engines >> r->issuing_engine & 1) && in_window(t, r->issue_ps, r->issue_ps))
        write_flow(t, "dma", "dma issue", ct->pid, issuer_tid, r->issue_ps, tid, r->start_ps);
    const char *tmpl = instr_template(t, r->core, r->instr);
    const char *text = tmpl ? tmpl : instr_text(t, r->core, r->instr);
    trc_record_t rec; /* as in on_instr: the slice and its kind's member */
    rec.kind = TRC_REC_SLICE;
    trc_slice_t *s = &rec.u.slice;
    memset(s, 0, offsetof(trc_slice_t, a));
    memset(&s->a.dma, 0, sizeof s->a.dma);
    s->operands_tmpl = s->operand_values = NULL;
    s->kind = TRC_SLICE_DMA;
    s->pid = ct->pid;
    s->tid = tid;
    s->ts_ps = r->start_ps;
    s->dur_ps = r->end_ps - r->start_ps;
    s->name = direction_name(src->space, dst->space);
    trc_dma_args_t *a = &s->a.dma;
    a->index = r->index;
    a->issuer = isa_engine_name((isa_engine_t)r->issuing_engine);
    a->line = r->instr->line;
    a->operands = text;
    if (tmpl) {
        s->operands_tmpl = tmpl;
        s->operand_values = t->vals;
    }
    a->bytes = r->bytes;
    a->src_bytes = r->src_bytes != r->bytes ? r->src_bytes : 0; /* only when it converts */
    a->src = space_name(src->space);
    a->dst = space_name(dst->space);
    a->accumulate = args[3].present ? 1 : 0;
    a->queued = r->start_ps - r->issue_ps;
    a->gbps = gbps;
    a->pieces = r->pieces;
    a->piece_bytes = round_exact(r->bytes_per_piece * 1000.0) / 1000.0;
    a->efficiency = round_exact(r->efficiency * 1e6) / 1e6;
    a->fixed = r->fixed_ps;
    a->queue_wait = r->queue_wait_ps;
    int lim = -1;
    for (int l = 0; l < SIM_DMA_LIMIT_COUNT; l++)
        if (r->limited_ps[l] && (lim < 0 || r->limited_ps[l] > r->limited_ps[lim]))
            lim = l;
    a->limit = lim >= 0 ? sim_dma_limit_name((sim_dma_limit_t)lim) : NULL;
    /* the breakdown as numbers: readers rebuild sim_explain_dma's text from them
     * (trc_dma_cost_text), which formatting it here for every transfer cost most of a
     * trace's time */
    a->cap_gbps = round_gbps(r->cap_gbps);
    a->engines = r->engines;
    a->dma_share = round_exact(r->dma_share * 1000.0) / 10.0;
    a->hbm_share = round_exact(r->hbm_share * 1000.0) / 10.0;
    a->limited_own = r->limited_ps[SIM_DMA_LIMIT_OWN];
    a->limited_engines = r->limited_ps[SIM_DMA_LIMIT_ENGINES];
    a->limited_hbm = r->limited_ps[SIM_DMA_LIMIT_HBM];
    a->limited_link = r->limited_ps[SIM_DMA_LIMIT_LINK];
    a->desc_start = r->desc_start_ps;
    a->descriptors = r->desc_end_ps > r->desc_start_ps ? r->desc_end_ps - r->desc_start_ps : 0;
    s->stable = text != t->text; /* the rest: literals */
    put(t, &rec);
}

static void on_sem(void *ctx, const sim_trace_sem_t *r)
{
    sim_trace_file_t *t = ctx;
    if (t->status != NCSIM_OK)
        return;
    core_trace_t *ct = &t->cores[r->core];
    last_post_t *lp = &ct->last_post[r->sem];
    if (r->by_engine >= ISA_ENGINE_COUNT) {
        *lp = ct->last_dma; /* dma.c reports the transfer just before its posts */
    } else {
        const poster_t *p = fifo_find(&ct->posters[r->by_engine], r->by_index);
        lp->valid = p != NULL;
        if (p) {
            lp->included = p->included;
            lp->tid = trc_tid(ct->pid, TRC_TRACK_ENGINE, r->by_engine);
            lp->ts_ps = p->start_ps;
        }
    }
    series_set(t, &ct->sem[r->sem], r->time_ps, (double)r->value);
}

/* ---- collectives and NeuronLinks ----------------------------------------------------------------- */

static int cc_included(const sim_trace_file_t *t, uint64_t from, uint64_t to)
{
    return (t->engines >> ISA_ENGINE_CC & 1) && in_window(t, from, to);
}

static void declare_links_process(sim_trace_file_t *t, uint32_t chip)
{
    if (chip >= t->nchips || t->links_declared[chip])
        return;
    t->links_declared[chip] = 1;
    char name[48];
    snprintf(name, sizeof name, "chip %u links", chip);
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_PROCESS;
    r.u.process.pid = trc_pid_links(chip);
    r.u.process.name = name;
    r.u.process.sort_index = (int32_t)(t->ncores + t->nchips + chip);
    put(t, &r);
}

/* The link with the simulator's index `id` (from a chunk's resources), set up on first use:
 * its chip's process and its bandwidth series. NULL when out of memory. */
static link_trace_t *get_link(sim_trace_file_t *t, const sim_trace_res_t *res)
{
    if (res->id >= t->nlinks) {
        uint32_t n = res->id + 1;
        link_trace_t *l = realloc(t->links, n * sizeof *l);
        if (!l)
            return NULL;
        memset(l + t->nlinks, 0, (n - t->nlinks) * sizeof *l);
        t->links = l;
        t->nlinks = n;
    }
    link_trace_t *l = &t->links[res->id];
    if (l->used)
        return l;
    series_t *ds = realloc(t->dseries, (t->ndseries + 1) * sizeof *ds);
    if (!ds)
        return NULL;
    t->dseries = ds;
    char name[64];
    snprintf(name, sizeof name, "link %u->%u bandwidth", res->from_chip, res->to_chip);
    l->series_name = strdup(name);
    if (!l->series_name)
        return NULL;
    l->used = 1;
    l->from = res->from_chip;
    l->to = res->to_chip;
    l->gbps = res->gbps;
    l->series = t->ndseries++;
    t->dseries[l->series] =
        (series_t){trc_pid_links(l->from), l->series_name, "GB/s", 0, 0, 0, 0};
    declare_links_process(t, l->from);
    return l;
}

/* A free lane of a link (a new one when all are busy); UINT32_MAX when out of memory. */
static uint32_t take_lane(link_trace_t *l)
{
    for (uint32_t k = 0; k < l->nlanes; k++)
        if (!l->lane_busy[k]) {
            l->lane_busy[k] = 1;
            return k;
        }
    uint8_t *b = realloc(l->lane_busy, l->nlanes + 1);
    if (!b)
        return UINT32_MAX;
    l->lane_busy = b;
    uint32_t *tid = realloc(l->lane_tid, (l->nlanes + 1) * sizeof *tid);
    if (!tid)
        return UINT32_MAX;
    l->lane_tid = tid;
    l->lane_busy[l->nlanes] = 1;
    l->lane_tid[l->nlanes] = 0;
    return l->nlanes++;
}

/* The track of a link's lane, written on first use; 0 when the process has no tid left. */
static uint32_t lane_track(sim_trace_file_t *t, link_trace_t *l, uint32_t lane)
{
    if (l->lane_tid[lane])
        return l->lane_tid[lane];
    uint32_t pid = trc_pid_links(l->from);
    uint32_t n = t->links_next_tid[l->from];
    if (n >= 600) /* the link kind's tid range (trace.h) */
        return 0;
    t->links_next_tid[l->from] = n + 1;
    uint32_t tid = trc_tid(pid, TRC_TRACK_LINK, n);
    char name[64];
    if (lane)
        snprintf(name, sizeof name, "link %u->%u #%u", l->from, l->to, lane + 1);
    else
        snprintf(name, sizeof name, "link %u->%u", l->from, l->to);
    write_track(t, pid, tid, name, (int32_t)(l->to * 1000 + (lane < 999 ? lane : 999)));
    l->lane_tid[lane] = tid;
    return tid;
}

static coll_trace_t *find_coll(sim_trace_file_t *t, uint64_t id)
{
    for (size_t i = 0; i < t->ncolls; i++)
        if (t->colls[i]->id == id)
            return t->colls[i];
    return NULL;
}

static coll_trace_t *get_coll(sim_trace_file_t *t, const sim_trace_cc_t *r)
{
    coll_trace_t *c = find_coll(t, r->coll);
    if (c)
        return c;
    if (t->ncolls == t->cap_colls) {
        size_t cap = t->cap_colls ? t->cap_colls * 2 : 8;
        coll_trace_t **p = realloc(t->colls, cap * sizeof *p);
        if (!p)
            return NULL;
        t->colls = p;
        t->cap_colls = cap;
    }
    c = calloc(1, sizeof *c);
    if (c)
        c->m = calloc(r->nmembers ? r->nmembers : 1, sizeof *c->m);
    if (!c || !c->m) {
        free(c);
        return NULL;
    }
    c->id = r->coll;
    c->n = r->nmembers;
    t->colls[t->ncolls++] = c;
    return c;
}

static void free_coll(coll_trace_t *c)
{
    free(c->m);
    free(c->ch);
    free(c->res);
    free(c);
}

static void drop_coll(sim_trace_file_t *t, coll_trace_t *c)
{
    for (size_t i = 0; i < t->ncolls; i++)
        if (t->colls[i] == c) {
            t->colls[i] = t->colls[--t->ncolls];
            break;
        }
    free_coll(c);
}

/* Bytes a resource carried in the step. */
static int use_res(coll_trace_t *c, const sim_trace_res_t *x, uint64_t bytes)
{
    res_use_t *u = NULL;
    for (size_t i = 0; i < c->nres && !u; i++)
        if (c->res[i].kind == x->kind && c->res[i].id == x->id)
            u = &c->res[i];
    if (!u) {
        if (c->nres == c->cap_res) {
            size_t cap = c->cap_res ? c->cap_res * 2 : 16;
            res_use_t *p = realloc(c->res, cap * sizeof *p);
            if (!p)
                return -1;
            c->res = p;
            c->cap_res = cap;
        }
        u = &c->res[c->nres++];
        memset(u, 0, sizeof *u);
        u->kind = x->kind;
        u->id = x->id;
        u->from = x->from_chip;
        u->to = x->to_chip;
        u->gbps = x->gbps;
    }
    u->bytes += (double)bytes * x->weight;
    if (x->gbps > u->gbps)
        u->gbps = x->gbps;
    return 0;
}

/* The resource busiest during the step's data phase [go, end]. */
static void find_bottleneck(coll_trace_t *c, uint64_t end)
{
    c->bottleneck[0] = '\0';
    c->bottleneck_pct = 0;
    if (!c->have_go || end <= c->go)
        return;
    double best = -1;
    const res_use_t *b = NULL;
    for (size_t i = 0; i < c->nres; i++) {
        const res_use_t *u = &c->res[i];
        double cap = u->gbps * 1e-3 * (double)(end - c->go); /* bytes in the data phase */
        double use = cap > 0 ? u->bytes / cap : 0;
        if (use > best + 1e-12) {
            best = use;
            b = u;
        }
    }
    if (!b)
        return;
    if (b->kind == SIM_TRACE_RES_LINK)
        snprintf(c->bottleneck, sizeof c->bottleneck, "link %u->%u", b->from, b->to);
    else if (b->kind == SIM_TRACE_RES_HBM)
        snprintf(c->bottleneck, sizeof c->bottleneck, "HBM chip %u", b->id);
    else if (b->kind == SIM_TRACE_RES_EFA)
        snprintf(c->bottleneck, sizeof c->bottleneck, "EFA instance %u %s", b->id / 2,
                 b->id % 2 ? "in" : "out");
    else
        snprintf(c->bottleneck, sizeof c->bottleneck, "DMA core %u", b->id);
    c->bottleneck_pct = round(best * 1000.0) / 10.0;
}

static const char *cc_algorithm_name(uint8_t a)
{
    switch (a) {
    case SIM_TRACE_CC_RING: return "ring";
    case SIM_TRACE_CC_RDH: return "rdh";
    case SIM_TRACE_CC_MESH: return "mesh";
    case SIM_TRACE_CC_KANGARING: return "kangaring";
    case SIM_TRACE_CC_PAIRWISE: return "pairwise";
    default: return "p2p";
    }
}

static const char *cc_phase(const sim_trace_cc_t *r)
{
    if (r->nmembers < 2)
        return "";
    switch (r->op) {
    case ISA_OP_ALL_REDUCE: return r->step < r->nsteps / 2 ? "reduce-scatter" : "all-gather";
    case ISA_OP_REDUCE_SCATTER: return "reduce-scatter";
    case ISA_OP_ALL_GATHER: return "all-gather";
    case ISA_OP_ALL_TO_ALL: return "exchange";
    default: return "send";
    }
}

static void cc_flow_begin(sim_trace_file_t *t, coll_trace_t *c, const sim_trace_cc_t *r)
{
    if (r->member >= c->n)
        return;
    if (!c->have_go) {
        c->have_go = 1;
        c->go = r->time_ps;
    }
    chunk_t *m = &c->m[r->member];
    if (!m->moving && !m->done)
        m->start = r->time_ps;
    m->moving = 1;
    if (r->send >= c->cap_ch) {
        uint32_t cap = r->send + 1 > 2 * c->cap_ch ? r->send + 1 : 2 * c->cap_ch;
        chunk_t *p = realloc(c->ch, cap * sizeof *p);
        if (!p) {
            fail(t, NCSIM_NOMEM, "out of memory");
            return;
        }
        memset(p + c->cap_ch, 0, (cap - c->cap_ch) * sizeof *p);
        c->ch = p;
        c->cap_ch = cap;
    }
    chunk_t *ch = &c->ch[r->send];
    memset(ch, 0, sizeof *ch);
    ch->start = r->time_ps;
    ch->bytes = r->bytes;
    ch->moving = 1;
    for (unsigned k = 0; k < r->nres; k++) {
        const sim_trace_res_t *x = &r->res[k];
        if (x->kind != SIM_TRACE_RES_LINK)
            continue;
        link_trace_t *l = get_link(t, x);
        uint32_t lane = l ? take_lane(l) : UINT32_MAX;
        if (lane == UINT32_MAX) {
            fail(t, NCSIM_NOMEM, "out of memory");
            return;
        }
        ch->link[ch->nlinks] = x->id;
        ch->lane[ch->nlinks++] = lane;
    }
}

static void cc_flow_end(sim_trace_file_t *t, coll_trace_t *c, const sim_trace_cc_t *r)
{
    if (r->member >= c->n || r->send >= c->cap_ch)
        return;
    chunk_t *ch = &c->ch[r->send];
    uint64_t start = ch->moving ? ch->start : r->start_ps;
    ch->start = start;
    ch->end = r->time_ps;
    ch->moving = 0;
    ch->done = 1;
    chunk_t *m = &c->m[r->member];
    if (!m->moving && !m->done)
        m->start = start;
    m->end = r->time_ps;
    m->done = 1;
    uint64_t dur = r->time_ps > start ? r->time_ps - start : 1;
    double gbps = round_gbps((double)r->bytes / (double)dur * 1000.0);
    c->slow_from = r->core;
    c->slow_to = r->to_core;
    c->have_slow = 1;
    for (unsigned k = 0; k < r->nres; k++) {
        const sim_trace_res_t *x = &r->res[k];
        if (use_res(c, x, r->bytes)) {
            fail(t, NCSIM_NOMEM, "out of memory");
            return;
        }
    }
    int included = cc_included(t, start, r->time_ps);
    char name[64];
    snprintf(name, sizeof name, "%s step %u/%u", isa_op_info((isa_op_t)r->op)->mnemonic,
             r->step + 1, r->nsteps);
    for (unsigned h = 0; h < ch->nlinks; h++) {
        if (ch->link[h] >= t->nlinks || !t->links[ch->link[h]].used)
            continue;
        link_trace_t *l = &t->links[ch->link[h]];
        uint32_t lane = ch->lane[h];
        l->lane_busy[lane] = 0;
        add_delta(t, l->series, start, gbps, 1);
        add_delta(t, l->series, r->time_ps, -gbps, -1);
        uint32_t tid = included ? lane_track(t, l, lane) : 0;
        if (!tid)
            continue;
        trc_record_t rec;
        memset(&rec, 0, sizeof rec);
        rec.kind = TRC_REC_SLICE;
        trc_slice_t *s = &rec.u.slice;
        s->kind = TRC_SLICE_LINK;
        s->pid = trc_pid_links(l->from);
        s->tid = tid;
        s->ts_ps = start;
        s->dur_ps = r->time_ps - start;
        s->name = name;
        trc_link_args_t *a = &s->a.link;
        a->bytes = r->bytes;
        a->src_chip = l->from;
        a->dst_chip = l->to;
        a->gbps = gbps;
        a->collective = isa_op_info((isa_op_t)r->op)->mnemonic;
        a->collective_id = r->coll;
        a->step = r->step + 1;
        a->from_core = r->core;
        a->to_core = r->to_core;
        a->group = r->group >= 0 && (uint32_t)r->group < t->prog->ngroups
                       ? isa_string(t->prog, t->prog->groups[r->group].name)
                       : "";
        a->link_gbps = round_gbps(l->gbps);
        put(t, &rec);
    }
    ch->nlinks = 0;
}

/* The end of a step, for one member: its slice on the core's "cc steps" track. */
static void cc_step_end(sim_trace_file_t *t, coll_trace_t *c, const sim_trace_cc_t *r)
{
    if (r->member == 0)
        find_bottleneck(c, r->time_ps);
    if (r->member < c->n && r->core < t->ncores &&
        cc_included(t, r->start_ps, r->time_ps)) {
        core_trace_t *ct = &t->cores[r->core];
        uint32_t tid = trc_tid(ct->pid, TRC_TRACK_COLLECTIVE, 0);
        if (!ct->cc_track) {
            ct->cc_track = 1;
            write_track(t, ct->pid, tid, "cc steps", ISA_ENGINE_COUNT);
        }
        const chunk_t *ch = &c->m[r->member];
        char name[64], slowest[64] = "";
        snprintf(name, sizeof name, "%s step %u/%u", isa_op_info((isa_op_t)r->op)->mnemonic,
                 r->step + 1, r->nsteps);
        if (c->have_slow)
            snprintf(slowest, sizeof slowest, "core %u->core %u", c->slow_from, c->slow_to);
        trc_record_t rec;
        memset(&rec, 0, sizeof rec);
        rec.kind = TRC_REC_SLICE;
        trc_slice_t *s = &rec.u.slice;
        s->kind = TRC_SLICE_COLLECTIVE;
        s->pid = ct->pid;
        s->tid = tid;
        s->ts_ps = r->start_ps;
        s->dur_ps = r->time_ps - r->start_ps;
        s->name = name;
        trc_collective_args_t *a = &s->a.collective;
        a->index = r->index;
        a->line = r->instr ? r->instr->line : 0;
        a->operands = r->instr ? instr_text(t, r->core, r->instr) : "";
        a->group = r->group >= 0 && (uint32_t)r->group < t->prog->ngroups
                       ? isa_string(t->prog, t->prog->groups[r->group].name)
                       : "";
        a->step = r->step + 1;
        a->bytes = r->bytes;
        a->collective = isa_op_info((isa_op_t)r->op)->mnemonic;
        a->collective_id = r->coll;
        a->nsteps = r->nsteps;
        a->phase = cc_phase(r);
        a->algorithm = cc_algorithm_name(r->algorithm);
        a->members = r->nmembers;
        a->size = r->size;
        a->to_core = r->to_core;
        a->reduce = r->reduce;
        a->latency = c->have_go && c->go > r->start_ps ? c->go - r->start_ps
                                                       : r->time_ps - r->start_ps;
        if (ch->done && r->bytes) {
            uint64_t dur = ch->end > ch->start ? ch->end - ch->start : 1;
            a->moving = ch->end - ch->start;
            a->gbps = round_gbps((double)r->bytes / (double)dur * 1000.0);
        }
        a->slowest = slowest;
        a->bottleneck = c->bottleneck;
        a->bottleneck_pct = c->bottleneck_pct;
        put(t, &rec);
    }
    if (r->member + 1 >= c->n) { /* the last member: the next step starts afresh */
        if (r->step + 1 >= r->nsteps) {
            drop_coll(t, c);
            return;
        }
        memset(c->m, 0, c->n * sizeof *c->m);
        if (c->ch)
            memset(c->ch, 0, c->cap_ch * sizeof *c->ch);
        c->nres = 0;
        c->have_go = 0;
        c->have_slow = 0;
    }
}

/* The bandwidth model's exact rate through a core's DMA engines or a chip's HBM changed:
 * the counters step to the new value (links have their own counters, from on_cc). */
static void on_bandwidth(void *ctx, int kind, uint32_t index, uint64_t time_ps, double gbps)
{
    sim_trace_file_t *t = ctx;
    if (t->status != NCSIM_OK)
        return;
    uint32_t series;
    if (kind == SIM_TRACE_RES_DMA && index < t->ncores)
        series = index * DS_PER_CORE + DS_DMA_BW;
    else if (kind == SIM_TRACE_RES_HBM && index < t->nchips)
        series = t->ncores * DS_PER_CORE + index;
    else
        return;
    /* rates to 1 MB/s: plain decimals in the file */
    live_set(t, series, time_ps, round_gbps(gbps));
}

static void on_cc(void *ctx, const sim_trace_cc_t *r)
{
    sim_trace_file_t *t = ctx;
    if (t->status != NCSIM_OK)
        return;
    coll_trace_t *c = get_coll(t, r);
    if (!c) {
        fail(t, NCSIM_NOMEM, "out of memory");
        return;
    }
    switch (r->event) {
    case SIM_TRACE_CC_STEP_BEGIN: break;
    case SIM_TRACE_CC_FLOW_BEGIN: cc_flow_begin(t, c, r); break;
    case SIM_TRACE_CC_FLOW_END: cc_flow_end(t, c, r); break;
    case SIM_TRACE_CC_STEP_END: cc_step_end(t, c, r); break;
    default: break;
    }
}

/* ---- life cycle -------------------------------------------------------------------------------------- */

ncsim_status_t sim_trace_parse_engines(const char *list, uint32_t *bits, char *err,
                                       size_t errlen)
{
    *bits = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int k = isa_engine_lookup(p, n);
        if (k >= 0)
            *bits |= 1u << k;
        else if (n == 3 && memcmp(p, "dma", 3) == 0)
            *bits |= SIM_TRACE_DMA_BIT;
        else {
            snprintf(err, errlen, "--trace-engines: unknown engine '%.*s' (use pe, act, dve, "
                                  "pool, sp, cc, dma)",
                     (int)n, p);
            return NCSIM_USAGE;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    if (!*bits) {
        snprintf(err, errlen, "--trace-engines: empty list");
        return NCSIM_USAGE;
    }
    return NCSIM_OK;
}

static void free_file(sim_trace_file_t *t)
{
    if (t->cores)
        for (uint32_t i = 0; i < t->ncores; i++) {
            core_trace_t *ct = &t->cores[i];
            for (int e = 0; e < ISA_ENGINE_COUNT; e++)
                free(ct->posters[e].p);
            for (int k = 0; k < ISA_MAX_SEMS; k++) {
                free(ct->sem_name[k]);
                free(ct->clause_name[k]);
                free((char *)ct->sem[k].name); /* "semaphore NAME", malloc'd at open */
            }
            free(ct->view_tensor);
            free(ct->live);
        }
    if (t->ops)
        for (uint32_t k = 0; k < OP_CACHE_SIZE; k++)
            free(t->ops[k].text);
    free(t->ops);
    free(t->fast);
    if (t->costs)
        for (uint32_t k = 0; k < COST_CACHE_SIZE; k++)
            free(t->costs[k].text);
    free(t->costs);
    if (t->tmpls)
        for (uint32_t k = 0; k < TMPL_CACHE_SIZE; k++)
            free(t->tmpls[k].text);
    free(t->tmpls);
    free(t->cores);
    free(t->dseries);
    free(t->held);
    for (uint32_t i = 0; i < t->nlinks; i++) {
        free(t->links[i].lane_busy);
        free(t->links[i].lane_tid);
        free(t->links[i].series_name);
    }
    free(t->links);
    free(t->links_declared);
    free(t->links_next_tid);
    for (size_t i = 0; i < t->ncolls; i++)
        free_coll(t->colls[i]);
    free(t->colls);
    free(t->deltas);
    for (size_t i = 0; i < t->nretired; i++)
        free(t->retired[i]);
    free(t->retired);
    free(t->block_first);
    free(t->blocks);
    free(t);
}

static int core_used(const isa_program_t *p, uint32_t core)
{
    for (int e = 0; e < ISA_ENGINE_COUNT; e++)
        if (isa_stream(p, core, (isa_engine_t)e)->count)
            return 1;
    return 0;
}

ncsim_status_t sim_trace_open(const sim_trace_options_t *opt, const isa_program_t *prog,
                              const mdl_arch_t *arch, sim_trace_file_t **out, char *err,
                              size_t errlen)
{
    *out = NULL;
    trc_format_t fmt = trc_format_for_path(opt->path);
    if (fmt == TRC_FORMAT_COUNT) {
        snprintf(err, errlen, "--trace %s: the name must end in .json, .json.gz or .pftrace",
                 opt->path);
        return NCSIM_USAGE;
    }
    if (opt->end_ps && opt->end_ps <= opt->start_ps) {
        snprintf(err, errlen, "--trace-end must be later than --trace-start");
        return NCSIM_USAGE;
    }
    sim_trace_file_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    t->opt = *opt;
    t->engines = opt->engines ? opt->engines : SIM_TRACE_ALL;
    t->prog = prog;
    t->arch = arch;
    t->ncores = prog->ncores;
    t->nchips = prog->chips;
    t->cores = calloc(t->ncores, sizeof *t->cores);
    t->ndseries = t->ncores * DS_PER_CORE + t->nchips;
    t->dseries = calloc(t->ndseries, sizeof *t->dseries);
    t->held = calloc(t->ndseries, sizeof *t->held);
    t->ops = calloc(OP_CACHE_SIZE, sizeof *t->ops);
    t->fast = calloc(OP_FAST_SIZE, sizeof *t->fast);
    t->costs = calloc(COST_CACHE_SIZE, sizeof *t->costs);
    t->tmpls = calloc(TMPL_CACHE_SIZE, sizeof *t->tmpls);
    t->block_first = calloc((size_t)prog->nargs + 1, sizeof *t->block_first);
    t->links_declared = calloc(t->nchips + 1, 1);
    t->links_next_tid = calloc(t->nchips + 1, sizeof *t->links_next_tid);
    if (!t->cores || !t->dseries || !t->held || !t->ops || !t->fast || !t->costs || !t->tmpls ||
        !t->block_first ||
        !t->links_declared ||
        !t->links_next_tid)
        goto oom;
    for (uint32_t i = 0; i < t->ncores; i++) {
        core_trace_t *ct = &t->cores[i];
        ct->pid = trc_pid_core(i);
        ct->view_tensor = malloc((prog->nviews + 1) * sizeof *ct->view_tensor);
        ct->live = calloc(prog->ntensors + 1, sizeof *ct->live);
        if (ct->view_tensor)
            for (uint32_t v = 0; v <= prog->nviews; v++)
                ct->view_tensor[v] = VIEW_UNKNOWN;
        if (!ct->view_tensor || !ct->live)
            goto oom;
        for (int k = 0; k < ISA_MAX_SEMS; k++) {
            char name[96];
            snprintf(name, sizeof name, "%d", k);
            for (uint32_t m = 0; m < prog->nsems; m++) {
                const isa_sem_t *S = &prog->sems[m];
                if (S->index == k && (S->core == -1 || (uint32_t)S->core == i) &&
                    *isa_string(prog, S->name))
                    snprintf(name, sizeof name, "%s", isa_string(prog, S->name));
            }
            ct->sem_name[k] = strdup(name);
            ct->clause_name[k] = clause_name(prog, i, (uint8_t)k);
            if (!ct->sem_name[k] || !ct->clause_name[k])
                goto oom;
            size_t cl = strlen(ct->clause_name[k]);
            ct->clause_len[k] = (uint16_t)(cl < UINT16_MAX ? cl : UINT16_MAX);
        }
    }
    ncsim_status_t st = trc_writer_open(opt->path, fmt, &t->w, err, errlen);
    if (st != NCSIM_OK) {
        free_file(t);
        return st;
    }
    t->sink.ctx = t;
    t->sink.instr = on_instr;
    t->sink.dma = on_dma;
    t->sink.sem = on_sem;
    t->sink.cc = on_cc;
    t->sink.bandwidth = on_bandwidth;

    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_RUN;
    char generator[64];
    snprintf(generator, sizeof generator, "ncsim %s", ncsim_version());
    r.u.run.generator = generator;
    r.u.run.program = opt->program ? opt->program : "";
    r.u.run.arch = arch->name;
    r.u.run.chips = prog->chips;
    r.u.run.cores = prog->ncores;
    r.u.run.timing_only = (uint64_t)(opt->timing_only != 0);
    r.u.run.peak_flops_per_core = (double)arch->pe.rows * arch->pe.cols * 2.0 *
                                  arch->pe.clock_ghz * 1e9;
    r.u.run.hbm_peak_gbps = arch->hbm.bandwidth_gbps;
    r.u.run.dma_peak_gbps = arch->dma.engine_bandwidth_gbps * arch->dma.engines;
    /* the NeuronCore's base clock, the profiler's cycle counts (the sync engine's) */
    r.u.run.core_clock_ghz = arch->sp.clock_ghz;
    r.u.run.window_start = opt->start_ps;
    r.u.run.window_end = opt->end_ps;
    r.u.run.engines = opt->engines ? opt->engines_text : "";
    put(t, &r);

    for (uint32_t i = 0; i < t->ncores; i++) {
        if (!core_used(prog, i))
            continue;
        core_trace_t *ct = &t->cores[i];
        char name[64];
        snprintf(name, sizeof name, "chip %u core %u", i / ISA_CORES_PER_CHIP,
                 i % ISA_CORES_PER_CHIP);
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_PROCESS;
        r.u.process.pid = ct->pid;
        r.u.process.name = name;
        r.u.process.sort_index = (int32_t)i;
        put(t, &r);
        for (int e = 0; e < ISA_ENGINE_COUNT; e++)
            if (isa_stream(prog, i, (isa_engine_t)e)->count && (t->engines >> e & 1))
                write_track(t, ct->pid, trc_tid(ct->pid, TRC_TRACK_ENGINE, (uint32_t)e),
                            isa_engine_name((isa_engine_t)e), e);
        t->dseries[i * DS_PER_CORE + DS_SBUF] =
            (series_t){ct->pid, "SBUF in use", "bytes", 0, 0, 0, 0};
        t->dseries[i * DS_PER_CORE + DS_PSUM] =
            (series_t){ct->pid, "PSUM in use", "bytes", 0, 0, 0, 0};
        for (int k = 0; k < ISA_MAX_SEMS; k++) {
            char *full = malloc(strlen(ct->sem_name[k]) + 16);
            if (!full)
                goto oom_open;
            sprintf(full, "semaphore %s", ct->sem_name[k]);
            /* the series keeps the "semaphore NAME" text; sem_name keeps NAME for flows */
            ct->sem[k] = (series_t){ct->pid, full, "value", 0, 0, 0, 0};
        }
        for (uint32_t m = 0; m < prog->nsems; m++) {
            const isa_sem_t *S = &prog->sems[m];
            if (S->core == -1 || (uint32_t)S->core == i)
                series_set(t, &ct->sem[S->index], 0, (double)S->init);
        }
        t->dseries[i * DS_PER_CORE + DS_INFLIGHT] =
            (series_t){ct->pid, "DMA in flight", "bytes", 0, 0, 0, 0};
        t->dseries[i * DS_PER_CORE + DS_DMA_BW] =
            (series_t){ct->pid, "DMA bandwidth", "GB/s", 0, 0, 0, 0};
    }
    for (uint32_t c = 0; c < t->nchips; c++) {
        char name[32];
        snprintf(name, sizeof name, "chip %u", c);
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_PROCESS;
        r.u.process.pid = trc_pid_chip(c);
        r.u.process.name = name;
        r.u.process.sort_index = (int32_t)(t->ncores + c);
        put(t, &r);
        t->dseries[t->ncores * DS_PER_CORE + c] =
            (series_t){trc_pid_chip(c), "HBM bandwidth", "GB/s", 0, 0, 0, 0};
    }
    if (t->status != NCSIM_OK) {
        snprintf(err, errlen, "%s", t->err);
        st = t->status;
        trc_writer_close(t->w, NULL, 0);
        t->w = NULL;
        goto fail_open;
    }
    *out = t;
    return NCSIM_OK;
oom_open:
    trc_writer_close(t->w, NULL, 0);
    t->w = NULL;
oom:
    snprintf(err, errlen, "out of memory");
    st = NCSIM_NOMEM;
fail_open:
    free_file(t);
    return st;
}

const sim_trace_sink_t *sim_trace_sink(sim_trace_file_t *t)
{
    return &t->sink;
}

static int cmp_delta(const void *a, const void *b)
{
    const delta_t *x = a, *y = b;
    if (x->series != y->series)
        return x->series < y->series ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The step functions from the deltas, one value per distinct time. */
static void write_delta_series(sim_trace_file_t *t)
{
    if (t->ndeltas)
        qsort(t->deltas, t->ndeltas, sizeof *t->deltas, cmp_delta);
    size_t i = 0;
    while (i < t->ndeltas && t->status == NCSIM_OK) {
        uint32_t sid = t->deltas[i].series;
        series_t *s = &t->dseries[sid];
        double value = 0;
        int64_t active = 0;
        if (t->deltas[i].t > 0)
            series_set(t, s, 0, 0);
        while (i < t->ndeltas && t->deltas[i].series == sid) {
            uint64_t time = t->deltas[i].t;
            while (i < t->ndeltas && t->deltas[i].series == sid && t->deltas[i].t == time) {
                value += t->deltas[i].v;
                active += t->deltas[i].active;
                i++;
            }
            /* sums of + and - rates leave rounding dust: no transfer moving means 0 */
            int rate = sid % DS_PER_CORE == DS_DMA_BW || sid >= t->ncores * DS_PER_CORE;
            if (rate && active <= 0)
                value = 0;
            if (value < 0 && value > -1e-6)
                value = 0;
            /* rates to 1 MB/s: no rounding dust from the sums in the file */
            series_set(t, s, time, rate ? round_gbps(value) : value);
        }
        series_flush(t, s);
    }
}

ncsim_status_t sim_trace_close(sim_trace_file_t *t, sim_trace_totals_t *totals, char *err,
                               size_t errlen)
{
    if (!t)
        return NCSIM_OK;
    for (uint32_t i = 0; i < t->ncores; i++) {
        if (!core_used(t->prog, i))
            continue;
        core_trace_t *ct = &t->cores[i];
        for (int k = 0; k < ISA_MAX_SEMS; k++)
            series_flush(t, &ct->sem[k]);
    }
    live_flush(t);
    live_deltas(t);
    write_delta_series(t);
    if (totals) {
        totals->events = trc_writer_events(t->w);
        totals->bytes = trc_writer_bytes(t->w);
    }
    ncsim_status_t st = t->status;
    char werr[256] = "";
    ncsim_status_t cst = trc_writer_close(t->w, werr, sizeof werr);
    if (st == NCSIM_OK && cst != NCSIM_OK) {
        st = cst;
        snprintf(t->err, sizeof t->err, "cannot write the trace %s: %s", t->opt.path, werr);
    }
    if (st != NCSIM_OK)
        snprintf(err, errlen, "%s", t->err);
    free_file(t);
    return st;
}
