/*
 * report.c -- `ncsim report` figures from a trace: per-engine busy/stall/idle, DMA and HBM
 * bandwidth, MFU/HFU, the largest stall causes, instruction kinds and the critical path.
 *
 * The trace is read once into a compact in-memory model (slices per track, flows resolved
 * to slices); everything else is computed from it.
 *
 * Critical path: start from the slice that completes last; repeatedly step to whichever of
 * its predecessors released it last:
 *   - an instruction: the previous instruction on its engine (released at its start + II,
 *     or at its completion when the instruction waited on the interlock), or the post
 *     that released its semaphore wait (the poster's completion: flows mark it);
 *   - a DMA transfer: the transfer ahead of it on its queue when it started the moment that
 *     one ended, otherwise the instruction that issued it.
 * The chain ends at a slice with no predecessor. Time between a predecessor's release and
 * the next step's start is "waiting" (DMA fixed cost, port contention, wake-up).
 */
#include "report.h"

#include "file.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "trace.h"

/* ---- names ------------------------------------------------------------------------------------- */

static const char *const stall_keys[] = {
#define XX(id, key, text) key,
    TRC_STALL_MAP(XX)
#undef XX
};
static const char *const stall_texts[] = {
#define XX(id, key, text) text,
    TRC_STALL_MAP(XX)
#undef XX
};

const char *trc_stall_key(trc_stall_t s)
{
    return s < TRC_STALL_COUNT ? stall_keys[s] : "?";
}

const char *trc_stall_text(trc_stall_t s)
{
    return s < TRC_STALL_COUNT ? stall_texts[s] : "?";
}

/* What would move each kind of bound (the verdict's advice). */
#define HINT_SYNC                                                                              \
    "engines hand work to each other and wait for completion each time: double-buffer so "     \
    "independent work overlaps the hand-offs, post as early as possible, fewer larger steps"
#define HINT_FIXED                                                                             \
    "issue transfers earlier (prefetch, deeper buffering) so their fixed cost overlaps "       \
    "compute; fewer, larger contiguous pieces per DMA (descriptors are shared by all queues)"
#define HINT_DMA_ENGINES                                                                       \
    "larger contiguous pieces (>= 2 KiB per run) raise DMA efficiency; fewer small "           \
    "transfers; see what each kind costs"
#define HINT_DMA_BW                                                                            \
    "the DMA engines move data at their peak: fewer bytes (narrower types, reuse in SBUF), "   \
    "transfers overlapped with compute (prefetch, double buffering)"
#define HINT_DMA_OWN                                                                           \
    "each transfer uses at most one DMA engine per contiguous piece and the HBM channels "     \
    "its span covers: more partitions or queues in parallel"
#define HINT_HBM "HBM bandwidth: reuse data in SBUF, move fewer or narrower bytes"
#define HINT_LINK "NeuronLink bandwidth: fewer bytes between chips, another algorithm or topology"

static const char *engine_hint(const char *engine)
{
    if (strcmp(engine, "pe") == 0)
        return "the tensor engine: see what each kind costs (fp32 costs 4x, N < 64 pays "
               "MM_INIT); at the bf16 rate with N >= 128 this is the roofline";
    if (strcmp(engine, "sp") == 0)
        return "the sync engine issues too much: fewer, larger dma instructions, issued from "
               "several engines";
    if (strcmp(engine, "cc") == 0)
        return "collectives: fewer and larger, overlapped with compute";
    return "move elementwise work to an idle engine (act, dve, pool), larger N per "
           "instruction (MIN_II floor), innermost strides <= 16 B";
}

/* ---- list helpers ------------------------------------------------------------------------------- */

static void *push(void **arr, size_t *n, size_t *cap, size_t elem)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        void *p = realloc(*arr, c * elem);
        if (!p)
            return NULL;
        *arr = p;
        *cap = c;
    }
    void *e = (char *)*arr + (*n)++ * elem;
    memset(e, 0, elem);
    return e;
}

/* Report lists grow by doubling; their capacity is kept by rounding n up to a power of two. */
static size_t cap_of(size_t n)
{
    size_t c = 16;
    while (c < n)
        c *= 2;
    return n ? c : 0;
}

trc_report_engine_t *trc_report_add_engine(trc_report_t *rep)
{
    size_t cap = cap_of(rep->nengines);
    return push((void **)&rep->engines, &rep->nengines, &cap, sizeof *rep->engines);
}

trc_report_dma_t *trc_report_add_dma(trc_report_t *rep)
{
    size_t cap = cap_of(rep->ndma);
    return push((void **)&rep->dma, &rep->ndma, &cap, sizeof *rep->dma);
}

trc_report_stall_t *trc_report_add_stall(trc_report_t *rep)
{
    size_t cap = cap_of(rep->nstalls);
    return push((void **)&rep->stalls, &rep->nstalls, &cap, sizeof *rep->stalls);
}

trc_report_link_t *trc_report_add_link(trc_report_t *rep)
{
    size_t cap = cap_of(rep->nlinks);
    return push((void **)&rep->links, &rep->nlinks, &cap, sizeof *rep->links);
}

static trc_report_collective_t *add_coll(trc_report_t *rep)
{
    size_t cap = cap_of(rep->ncolls);
    return push((void **)&rep->colls, &rep->ncolls, &cap, sizeof *rep->colls);
}

trc_report_line_t *trc_report_line(trc_report_t *rep, uint32_t line)
{
    for (size_t i = 0; i < rep->nlines; i++)
        if (rep->lines[i].line == line)
            return &rep->lines[i];
    size_t cap = cap_of(rep->nlines);
    trc_report_line_t *l = push((void **)&rep->lines, &rep->nlines, &cap, sizeof *rep->lines);
    if (l)
        l->line = line;
    return l;
}

uint64_t trc_report_line_stall(const trc_report_line_t *l)
{
    uint64_t s = 0;
    for (int c = 0; c < TRC_STALL_COUNT; c++)
        s += l->stall_by[c];
    return s;
}

uint64_t trc_report_line_cost(const trc_report_line_t *l)
{
    return l->busy_ps + l->dma_ps;
}

int trc_report_bound_add(trc_report_t *rep, const char *what, uint64_t ps, const char *hint)
{
    if (!ps)
        return 0;
    for (size_t i = 0; i < rep->nbounds; i++)
        if (strcmp(rep->bounds[i].what, what) == 0) {
            rep->bounds[i].ps += ps;
            return 0;
        }
    size_t cap = cap_of(rep->nbounds);
    trc_report_bound_t *b = push((void **)&rep->bounds, &rep->nbounds, &cap, sizeof *rep->bounds);
    if (!b)
        return -1;
    snprintf(b->what, sizeof b->what, "%s", what);
    snprintf(b->hint, sizeof b->hint, "%s", hint ? hint : "");
    b->ps = ps;
    return 0;
}

void trc_report_verdict(const trc_report_t *rep, char *buf, size_t n)
{
    if (n)
        buf[0] = '\0';
    if (!rep->nbounds || !rep->bounds_of_ps)
        return;
    const trc_report_bound_t *b = &rep->bounds[0];
    double share = 100.0 * (double)b->ps / (double)rep->bounds_of_ps;
    char next[96] = "";
    if (rep->nbounds > 1)
        snprintf(next, sizeof next, "; next: %s %.1f %%", rep->bounds[1].what,
                 100.0 * (double)rep->bounds[1].ps / (double)rep->bounds_of_ps);
    snprintf(buf, n, "bound by %s: %.1f %% of the %s%s; to move it: %s", b->what, share,
             rep->bounds_from_path ? "critical path" : "run (busy time, from statistics)",
             next, b->hint);
}

static trc_report_kind_t *add_kind(trc_report_t *rep)
{
    size_t cap = cap_of(rep->nkinds);
    return push((void **)&rep->kinds, &rep->nkinds, &cap, sizeof *rep->kinds);
}

static trc_report_step_t *add_step(trc_report_t *rep)
{
    size_t cap = cap_of(rep->npath);
    return push((void **)&rep->path, &rep->npath, &cap, sizeof *rep->path);
}

static trc_report_track_time_t *add_track_time(trc_report_t *rep)
{
    size_t cap = cap_of(rep->npath_tracks);
    return push((void **)&rep->path_tracks, &rep->npath_tracks, &cap, sizeof *rep->path_tracks);
}

void trc_report_note(trc_report_t *rep, const char *fmt, ...)
{
    if (rep->nnotes == (int)(sizeof rep->notes / sizeof rep->notes[0]))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->notes[rep->nnotes++], sizeof rep->notes[0], fmt, ap);
    va_end(ap);
}

static int cmp_stall(const void *a, const void *b)
{
    const trc_report_stall_t *x = a, *y = b;
    if (x->ps != y->ps)
        return x->ps > y->ps ? -1 : 1;
    if (x->core != y->core)
        return x->core < y->core ? -1 : 1;
    int c = strcmp(x->engine, y->engine);
    return c ? c : strcmp(x->cause, y->cause);
}

static int cmp_link(const void *a, const void *b)
{
    const trc_report_link_t *x = a, *y = b;
    if (x->from_chip != y->from_chip)
        return x->from_chip < y->from_chip ? -1 : 1;
    return x->to_chip < y->to_chip ? -1 : x->to_chip > y->to_chip;
}

static int cmp_coll(const void *a, const void *b)
{
    const trc_report_collective_t *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Without a critical path (a statistics file): each resource's busy time, the busiest core
 * for engines and DMA; HBM as the time its bytes take at peak. A coarser verdict: busy is
 * not necessarily on the path.
 */
static void bounds_from_totals(trc_report_t *rep)
{
    rep->bounds_of_ps = rep->total_ps;
    char what[64];
    for (size_t i = 0; i < rep->nengines; i++) {
        const trc_report_engine_t *e = &rep->engines[i];
        snprintf(what, sizeof what, "engine %s", e->name);
        uint64_t best = 0;
        for (size_t j = 0; j < rep->nengines; j++)
            if (strcmp(rep->engines[j].name, e->name) == 0 && rep->engines[j].busy_ps > best)
                best = rep->engines[j].busy_ps;
        int seen = 0;
        for (size_t j = 0; j < rep->nbounds; j++)
            seen |= strcmp(rep->bounds[j].what, what) == 0;
        if (!seen)
            trc_report_bound_add(rep, what, best, engine_hint(e->name));
    }
    uint64_t dma = 0;
    for (size_t i = 0; i < rep->ndma; i++)
        if (rep->dma[i].busy_ps > dma)
            dma = rep->dma[i].busy_ps;
    uint64_t hbm = rep->hbm_peak_gbps > 0
                       ? (uint64_t)((double)(rep->hbm_read + rep->hbm_write) /
                                    (rep->hbm_peak_gbps * 1e-3))
                       : 0;
    /* transfers moving while HBM runs at its peak are HBM's: when HBM's time at peak covers
     * nearly all the DMA busy time, the DMA was waiting for HBM */
    if (hbm && (double)hbm >= 0.95 * (double)dma) {
        trc_report_bound_add(rep, "HBM", hbm > dma ? hbm : dma, HINT_HBM);
    } else {
        trc_report_bound_add(rep, "DMA transfers", dma,
                             "the core's DMA was busy: report on a trace to see whether piece "
                             "sizes (efficiency), per-transfer caps or the engines' bandwidth "
                             "set the transfers' rate");
        trc_report_bound_add(rep, "HBM", hbm, HINT_HBM);
    }
    uint64_t link = 0;
    for (size_t i = 0; i < rep->nlinks; i++)
        if (rep->links[i].busy_ps > link)
            link = rep->links[i].busy_ps;
    trc_report_bound_add(rep, "a NeuronLink", link, HINT_LINK);
}

static int cmp_line(const void *a, const void *b)
{
    const trc_report_line_t *x = a, *y = b;
    uint64_t cx = trc_report_line_cost(x), cy = trc_report_line_cost(y);
    if (cx != cy)
        return cx > cy ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_bound(const void *a, const void *b)
{
    const trc_report_bound_t *x = a, *y = b;
    if (x->ps != y->ps)
        return x->ps > y->ps ? -1 : 1;
    return strcmp(x->what, y->what);
}

void trc_report_finish(trc_report_t *rep)
{
    if (!rep->bounds_from_path && !rep->nbounds)
        bounds_from_totals(rep);
    if (rep->nlines)
        qsort(rep->lines, rep->nlines, sizeof *rep->lines, cmp_line);
    if (rep->nbounds)
        qsort(rep->bounds, rep->nbounds, sizeof *rep->bounds, cmp_bound);
    if (rep->nstalls)
        qsort(rep->stalls, rep->nstalls, sizeof *rep->stalls, cmp_stall);
    if (rep->nlinks)
        qsort(rep->links, rep->nlinks, sizeof *rep->links, cmp_link);
    if (rep->ncolls)
        qsort(rep->colls, rep->ncolls, sizeof *rep->colls, cmp_coll);
}

void trc_report_free(trc_report_t *rep)
{
    free(rep->engines);
    free(rep->dma);
    free(rep->stalls);
    free(rep->kinds);
    free(rep->path);
    free(rep->path_tracks);
    free(rep->links);
    free(rep->colls);
    free(rep->lines);
    free(rep->bounds);
    memset(rep, 0, sizeof *rep);
}

/* ---- the model of a trace ------------------------------------------------------------------------ */

enum { SP_SBUF, SP_PSUM, SP_HBM, SP_OTHER };

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
    uint64_t bytes, flops, hw_flops;
    int64_t sem_pred, dma_pred; /* slice index of the flow source, -1 when none */
    uint32_t cost;      /* string id of its cost breakdown (transfers: shape and limit) */
    uint32_t limit;     /* transfers: string id of what set their rate */
    float efficiency;   /* transfers: of their piece size (0: unknown) */
    uint64_t queued;    /* transfers: issue to start */
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

typedef struct interval {
    uint64_t a, b;
} interval_t;

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

static uint64_t hash_bytes(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Interned string id (0 is ""). */
static uint32_t intern(model_t *m, const char *s)
{
    if (!s || !*s)
        return 0;
    if ((m->nstr + 1) * 2 > m->cap_strix) {
        size_t cap = m->cap_strix ? m->cap_strix * 2 : 256;
        uint32_t *ix = calloc(cap, sizeof *ix);
        if (!ix) {
            m->oom = 1;
            return 0;
        }
        for (size_t i = 1; i < m->nstr; i++) {
            size_t j = hash_bytes(m->str[i]) & (cap - 1);
            while (ix[j])
                j = (j + 1) & (cap - 1);
            ix[j] = (uint32_t)i + 1;
        }
        free(m->strix);
        m->strix = ix;
        m->cap_strix = cap;
    }
    if (!m->nstr) {
        char **z = push((void **)&m->str, &m->nstr, &m->cap_str, sizeof *m->str);
        if (!z) {
            m->oom = 1;
            return 0;
        }
        *z = NULL; /* id 0 */
    }
    size_t j = hash_bytes(s) & (m->cap_strix - 1);
    while (m->strix[j]) {
        uint32_t id = m->strix[j] - 1;
        if (strcmp(m->str[id], s) == 0)
            return id;
        j = (j + 1) & (m->cap_strix - 1);
    }
    char *c = strdup(s);
    char **slot = c ? push((void **)&m->str, &m->nstr, &m->cap_str, sizeof *m->str) : NULL;
    if (!slot) {
        free(c);
        m->oom = 1;
        return 0;
    }
    *slot = c;
    m->strix[j] = (uint32_t)(m->nstr - 1) + 1;
    return (uint32_t)(m->nstr - 1);
}

static const char *str_of(const model_t *m, uint32_t id)
{
    return id && id < m->nstr ? m->str[id] : "";
}

static size_t track_slot(uint32_t pid, uint32_t tid, size_t cap)
{
    uint64_t k = ((uint64_t)pid << 32 | tid) * 0x9e3779b97f4a7c15ull;
    return (size_t)(k >> 24) & (cap - 1);
}

static int64_t find_track(const model_t *m, uint32_t pid, uint32_t tid)
{
    if (!m->cap_index)
        return -1;
    for (size_t j = track_slot(pid, tid, m->cap_index); m->index[j];
         j = (j + 1) & (m->cap_index - 1)) {
        const rtrack_t *t = &m->tracks[m->index[j] - 1];
        if (t->pid == pid && t->tid == tid)
            return (int64_t)m->index[j] - 1;
    }
    return -1;
}

static int64_t get_track(model_t *m, uint32_t pid, uint32_t tid, const char *name)
{
    int64_t k = find_track(m, pid, tid);
    if (k >= 0) {
        if (name && *name)
            snprintf(m->tracks[k].name, sizeof m->tracks[k].name, "%s", name);
        return k;
    }
    if ((m->ntracks + 1) * 2 > m->cap_index) {
        size_t cap = m->cap_index ? m->cap_index * 2 : 64;
        size_t *ix = calloc(cap, sizeof *ix);
        if (!ix)
            return -1;
        for (size_t i = 0; i < m->ntracks; i++) {
            size_t j = track_slot(m->tracks[i].pid, m->tracks[i].tid, cap);
            while (ix[j])
                j = (j + 1) & (cap - 1);
            ix[j] = i + 1;
        }
        free(m->index);
        m->index = ix;
        m->cap_index = cap;
    }
    rtrack_t *t = push((void **)&m->tracks, &m->ntracks, &m->cap_tracks, sizeof *m->tracks);
    if (!t)
        return -1;
    t->pid = pid;
    t->tid = tid;
    if (name && *name) {
        snprintf(t->name, sizeof t->name, "%s", name);
    } else {
        uint32_t n;
        trc_track_kind_t kind = trc_track_kind_of_tid(tid, &n);
        snprintf(t->name, sizeof t->name, "%s %u", trc_track_kind_name(kind), n);
    }
    size_t j = track_slot(pid, tid, m->cap_index);
    while (m->index[j])
        j = (j + 1) & (m->cap_index - 1);
    m->index[j] = m->ntracks;
    return (int64_t)m->ntracks - 1;
}

static uint8_t space_code(const char *s)
{
    if (!s)
        return SP_OTHER;
    return strcmp(s, "sbuf") == 0 ? SP_SBUF
           : strcmp(s, "psum") == 0 ? SP_PSUM
           : strcmp(s, "hbm") == 0  ? SP_HBM
                                    : SP_OTHER;
}

static int link_slice(model_t *m, const trc_slice_t *s)
{
    const trc_link_args_t *a = &s->a.link;
    rlink_t *l = NULL;
    for (size_t i = 0; i < m->nlinks && !l; i++)
        if (m->links[i].from == a->src_chip && m->links[i].to == a->dst_chip)
            l = &m->links[i];
    if (!l) {
        l = push((void **)&m->links, &m->nlinks, &m->cap_links, sizeof *m->links);
        if (!l)
            return -1;
        l->from = (uint32_t)a->src_chip;
        l->to = (uint32_t)a->dst_chip;
    }
    if (a->link_gbps > l->gbps)
        l->gbps = a->link_gbps;
    l->transfers++;
    l->bytes += a->bytes;
    interval_t *iv = push((void **)&l->iv, &l->niv, &l->cap_iv, sizeof *l->iv);
    if (!iv)
        return -1;
    iv->a = s->ts_ps;
    iv->b = s->ts_ps + s->dur_ps;
    return 0;
}

static int collective_slice(model_t *m, const trc_slice_t *s)
{
    const trc_collective_args_t *a = &s->a.collective;
    /* HBM traffic of the member's chunk: read at the sender (and the receiver's own data
     * when it combines), written at the receiver */
    m->rep->hbm_read += a->bytes * (a->reduce ? 2 : 1);
    m->rep->hbm_write += a->bytes;
    if (!a->collective_id || !a->step)
        return 0;
    rcoll_t *c = NULL;
    for (size_t i = m->ncolls; i-- > 0 && !c;)
        if (m->colls[i].id == a->collective_id)
            c = &m->colls[i];
    if (!c) {
        c = push((void **)&m->colls, &m->ncolls, &m->cap_colls, sizeof *m->colls);
        if (!c)
            return -1;
        c->id = a->collective_id;
        c->op = intern(m, a->collective);
        c->group = intern(m, a->group);
        c->algorithm = intern(m, a->algorithm);
        c->members = (uint32_t)a->members;
        c->size = a->size;
    }
    if (a->step > c->nsteps) {
        uint32_t n = (uint32_t)(a->nsteps > a->step ? a->nsteps : a->step);
        if (n > (1u << 24))
            return 0; /* not a step count this writer makes */
        rstep_t *p = realloc(c->steps, n * sizeof *p);
        if (!p)
            return -1;
        memset(p + c->nsteps, 0, (n - c->nsteps) * sizeof *p);
        c->steps = p;
        c->nsteps = n;
    }
    rstep_t *st = &c->steps[a->step - 1];
    if (st->seen)
        return 0;
    st->seen = 1;
    st->start = s->ts_ps;
    st->end = s->ts_ps + s->dur_ps;
    st->latency = a->latency < s->dur_ps ? a->latency : s->dur_ps;
    st->bottleneck = intern(m, a->bottleneck);
    return 0;
}

static int on_record(void *ctx, const trc_record_t *r)
{
    model_t *m = ctx;
    trc_report_t *rep = m->rep;
    switch ((trc_kind_t)r->kind) {
    case TRC_REC_RUN: {
        const trc_run_t *u = &r->u.run;
        m->have_run = 1;
        snprintf(rep->program, sizeof rep->program, "%s", u->program ? u->program : "");
        snprintf(rep->arch, sizeof rep->arch, "%s", u->arch ? u->arch : "");
        rep->chips = u->chips;
        rep->peak_flops_per_core = u->peak_flops_per_core;
        rep->hbm_peak_gbps = u->hbm_peak_gbps * (double)(u->chips ? u->chips : 1);
        rep->dma_peak_gbps_per_core = u->dma_peak_gbps;
        m->window_start = u->window_start;
        m->window_end = u->window_end;
        snprintf(m->engines, sizeof m->engines, "%s", u->engines ? u->engines : "");
        break;
    }
    case TRC_REC_TRACK:
        if (get_track(m, r->u.track.pid, r->u.track.tid, r->u.track.name) < 0)
            m->oom = 1;
        break;
    case TRC_REC_SLICE: {
        const trc_slice_t *s = &r->u.slice;
        if (s->kind == TRC_SLICE_LINK) {
            if (link_slice(m, s))
                m->oom = 1;
            break;
        }
        if (s->kind == TRC_SLICE_COLLECTIVE) {
            if (collective_slice(m, s))
                m->oom = 1;
            break;
        }
        if (s->kind != TRC_SLICE_INSTR && s->kind != TRC_SLICE_DMA)
            break;
        int64_t tk = get_track(m, s->pid, s->tid, NULL);
        rs_t *x = tk < 0 ? NULL : push((void **)&m->sl, &m->nsl, &m->cap_sl, sizeof *m->sl);
        if (!x) {
            m->oom = 1;
            break;
        }
        x->track = (uint32_t)tk;
        x->kind = s->kind;
        x->ts = s->ts_ps;
        x->dur = s->dur_ps;
        x->sem_pred = x->dma_pred = -1;
        if (s->kind == TRC_SLICE_INSTR) {
            const trc_instr_args_t *a = &s->a.instr;
            x->name = intern(m, s->name);
            x->end = s->ts_ps + (a->latency > s->dur_ps ? a->latency : s->dur_ps);
            x->index = a->index;
            x->line = (uint32_t)a->line;
            x->wait[TRC_STALL_SEMAPHORE] = a->wait_semaphore;
            x->wait[TRC_STALL_PORT] = a->wait_port;
            x->wait[TRC_STALL_INTERLOCK] = a->wait_interlock;
            x->wait[TRC_STALL_COLLECTIVE] = a->wait_collective;
            x->sem = intern(m, a->semaphore);
            x->bytes = a->bytes;
            x->flops = a->flops;
            x->hw_flops = a->hw_flops;
            x->cost = intern(m, a->cost);
        } else {
            const trc_dma_args_t *a = &s->a.dma;
            char name[64];
            snprintf(name, sizeof name, "dma %s->%s", a->src ? a->src : "?",
                     a->dst ? a->dst : "?");
            x->name = intern(m, name);
            x->end = s->ts_ps + s->dur_ps;
            x->index = a->index;
            x->line = (uint32_t)a->line;
            x->bytes = a->bytes;
            x->src = space_code(a->src);
            x->dst = space_code(a->dst);
            x->acc = a->accumulate != 0;
            x->limit = intern(m, a->limit);
            x->efficiency = (float)a->efficiency;
            x->queued = a->queued;
            if (a->pieces) {
                char cost[160];
                snprintf(cost, sizeof cost, "%llu pieces x %.0f B, efficiency %.3f, rate set by %s",
                         (unsigned long long)a->pieces, a->piece_bytes, a->efficiency,
                         a->limit && *a->limit ? a->limit : "-");
                x->cost = intern(m, cost);
            }
        }
        rtrack_t *t = &m->tracks[tk];
        uint32_t *slot = push((void **)&t->s, &t->n, &t->cap, sizeof *t->s);
        if (!slot) {
            m->oom = 1;
            break;
        }
        *slot = (uint32_t)(m->nsl - 1);
        if (t->n > 1 && m->sl[t->s[t->n - 2]].ts > x->ts)
            t->unsorted = 1;
        break;
    }
    case TRC_REC_FLOW: {
        rflow_t *f = push((void **)&m->flows, &m->nflows, &m->cap_flows, sizeof *m->flows);
        if (!f) {
            m->oom = 1;
            break;
        }
        f->from_pid = r->u.flow.from_pid;
        f->from_tid = r->u.flow.from_tid;
        f->from_ts = r->u.flow.from_ts_ps;
        f->to_pid = r->u.flow.to_pid;
        f->to_tid = r->u.flow.to_tid;
        f->to_ts = r->u.flow.to_ts_ps;
        f->is_dma = r->u.flow.cat && strcmp(r->u.flow.cat, "dma") == 0;
        break;
    }
    default: break;
    }
    return m->oom;
}

static const rs_t *sort_base;

static int cmp_slice_ix(const void *a, const void *b)
{
    const rs_t *x = &sort_base[*(const uint32_t *)a], *y = &sort_base[*(const uint32_t *)b];
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Position in a track of the slice starting at ts; -1 when none. */
static int64_t slice_at(const model_t *m, const rtrack_t *t, uint64_t ts)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->sl[t->s[mid]].ts < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n && m->sl[t->s[lo]].ts == ts ? (int64_t)lo : -1;
}

static void resolve_flows(model_t *m)
{
    for (size_t i = 0; i < m->nflows; i++) {
        const rflow_t *f = &m->flows[i];
        int64_t ft = find_track(m, f->from_pid, f->from_tid);
        int64_t tt = find_track(m, f->to_pid, f->to_tid);
        if (ft < 0 || tt < 0)
            continue;
        int64_t a = slice_at(m, &m->tracks[ft], f->from_ts);
        int64_t b = slice_at(m, &m->tracks[tt], f->to_ts);
        if (a < 0 || b < 0)
            continue;
        uint32_t src = m->tracks[ft].s[a];
        rs_t *dst = &m->sl[m->tracks[tt].s[b]];
        int64_t *pred = f->is_dma ? &dst->dma_pred : &dst->sem_pred;
        if (*pred < 0 || m->sl[*pred].end < m->sl[src].end)
            *pred = src;
    }
}

static int64_t core_of(const rtrack_t *t)
{
    return trc_core_of_pid(t->pid);
}

/* ---- figures ------------------------------------------------------------------------------------ */

static int cmp_track_ptr(const void *a, const void *b)
{
    const rtrack_t *x = *(rtrack_t *const *)a, *y = *(rtrack_t *const *)b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_interval(const void *x, const void *y)
{
    const interval_t *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* One slice into its track's instruction kinds. */
static int kind_add(rtrack_t *t, const rs_t *x)
{
    kind_acc_t *ka = NULL;
    for (size_t k = 0; k < t->nkinds; k++)
        if (t->kinds[k].name == x->name)
            ka = &t->kinds[k];
    if (!ka) {
        ka = push((void **)&t->kinds, &t->nkinds, &t->cap_kinds, sizeof *ka);
        if (!ka)
            return -1;
        ka->name = x->name;
    }
    ka->count++;
    ka->busy += x->dur;
    ka->latency += x->end - x->ts;
    for (int c = 0; c < TRC_STALL_COUNT; c++)
        ka->wait += x->wait[c];
    ka->flops += x->flops;
    ka->bytes += x->bytes;
    if (x->cost) {
        int j = 0;
        while (j < KIND_COSTS && ka->cost[j] && ka->cost[j] != x->cost)
            j++;
        if (j == KIND_COSTS) { /* full: replace the least busy */
            j = 0;
            for (int q = 1; q < KIND_COSTS; q++)
                if (ka->cost_busy[q] < ka->cost_busy[j])
                    j = q;
            ka->cost_busy[j] = 0;
        }
        ka->cost[j] = x->cost;
        ka->cost_busy[j] += x->dur;
    }
    return 0;
}

static int engine_and_kinds(model_t *m, rtrack_t *t)
{
    trc_report_t *rep = m->rep;
    int64_t core = core_of(t);
    trc_report_engine_t *e = trc_report_add_engine(rep);
    if (!e)
        return -1;
    e->core = (uint32_t)(core < 0 ? 0 : core);
    snprintf(e->name, sizeof e->name, "%s", t->name);
    for (size_t i = 0; i < t->n; i++) {
        const rs_t *x = &m->sl[t->s[i]];
        e->instructions++;
        e->busy_ps += x->dur;
        rep->flops += x->flops;
        rep->hw_flops += x->hw_flops;
        for (int c = 0; c < TRC_STALL_COUNT; c++) {
            e->stall_ps += x->wait[c];
            if (!x->wait[c])
                continue;
            uint32_t sem = c == TRC_STALL_SEMAPHORE ? x->sem : 0;
            stall_acc_t *sa = NULL;
            for (size_t k = 0; k < t->nstalls; k++)
                if (t->stalls[k].cause == c && t->stalls[k].sem == sem)
                    sa = &t->stalls[k];
            if (!sa) {
                sa = push((void **)&t->stalls, &t->nstalls, &t->cap_stalls, sizeof *sa);
                if (!sa)
                    return -1;
                sa->cause = (uint8_t)c;
                sa->sem = sem;
            }
            sa->ps += x->wait[c];
            sa->n++;
        }
        if (kind_add(t, x))
            return -1;
    }
    for (size_t k = 0; k < t->nstalls; k++) {
        trc_report_stall_t *s = trc_report_add_stall(rep);
        if (!s)
            return -1;
        s->core = e->core;
        snprintf(s->engine, sizeof s->engine, "%s", t->name);
        if (t->stalls[k].cause == TRC_STALL_SEMAPHORE)
            snprintf(s->cause, sizeof s->cause, "semaphore %s", str_of(m, t->stalls[k].sem));
        else
            snprintf(s->cause, sizeof s->cause, "%s", trc_stall_text(t->stalls[k].cause));
        s->ps = t->stalls[k].ps;
        s->instructions = t->stalls[k].n;
    }
    return 0;
}

/* Instruction kinds merged over cores: (engine, mnemonic) in first-seen order. */
static int merge_kinds(model_t *m, const rtrack_t *t, const char *engine)
{
    trc_report_t *rep = m->rep;
    for (size_t k = 0; k < t->nkinds; k++) {
        const kind_acc_t *ka = &t->kinds[k];
        trc_report_kind_t *o = NULL;
        for (size_t j = 0; j < rep->nkinds; j++)
            if (strcmp(rep->kinds[j].engine, engine) == 0 &&
                strcmp(rep->kinds[j].name, str_of(m, ka->name)) == 0)
                o = &rep->kinds[j];
        if (!o) {
            o = add_kind(rep);
            if (!o)
                return -1;
            snprintf(o->engine, sizeof o->engine, "%s", engine);
            snprintf(o->name, sizeof o->name, "%s", str_of(m, ka->name));
        }
        o->count += ka->count;
        o->busy_ps += ka->busy;
        o->latency_ps += ka->latency;
        o->wait_ps += ka->wait;
        o->flops += ka->flops;
        o->bytes += ka->bytes;
        for (int j = 0; j < KIND_COSTS; j++) {
            if (!ka->cost[j])
                continue;
            const char *text = str_of(m, ka->cost[j]);
            if (strcmp(o->cost, text) == 0)
                o->cost_busy_ps += ka->cost_busy[j];
            else if (ka->cost_busy[j] > o->cost_busy_ps) {
                snprintf(o->cost, sizeof o->cost, "%s", text);
                o->cost_busy_ps = ka->cost_busy[j];
            }
        }
    }
    return 0;
}

static int dma_figures(model_t *m, rtrack_t **order, size_t norder)
{
    trc_report_t *rep = m->rep;
    size_t i = 0;
    while (i < norder) {
        int64_t core = core_of(order[i]);
        size_t j = i, total = 0;
        while (j < norder && core_of(order[j]) == core) {
            if (trc_track_kind_of_tid(order[j]->tid, NULL) == TRC_TRACK_DMA_QUEUE)
                total += order[j]->n;
            j++;
        }
        if (total && core >= 0) {
            interval_t *iv = malloc(total * sizeof *iv);
            trc_report_dma_t *d = iv ? trc_report_add_dma(rep) : NULL;
            if (!d) {
                free(iv);
                return -1;
            }
            d->core = (uint32_t)core;
            size_t n = 0;
            for (size_t k = i; k < j; k++) {
                if (trc_track_kind_of_tid(order[k]->tid, NULL) != TRC_TRACK_DMA_QUEUE)
                    continue;
                for (size_t q = 0; q < order[k]->n; q++) {
                    const rs_t *x = &m->sl[order[k]->s[q]];
                    d->transfers++;
                    d->bytes += x->bytes;
                    if (x->src == SP_HBM)
                        rep->hbm_read += x->bytes;
                    if (x->dst == SP_HBM) {
                        rep->hbm_write += x->bytes;
                        if (x->acc)
                            rep->hbm_read += x->bytes;
                    }
                    iv[n].a = x->ts;
                    iv[n++].b = x->ts + x->dur;
                }
            }
            qsort(iv, n, sizeof *iv, cmp_interval);
            uint64_t a = 0, b = 0;
            int open = 0;
            for (size_t k = 0; k < n; k++) {
                if (open && iv[k].a <= b) {
                    if (iv[k].b > b)
                        b = iv[k].b;
                    continue;
                }
                if (open)
                    d->busy_ps += b - a;
                a = iv[k].a;
                b = iv[k].b;
                open = 1;
            }
            if (open)
                d->busy_ps += b - a;
            free(iv);
        }
        i = j;
    }
    return 0;
}

/* Time covered by a set of intervals (sorted here). */
static uint64_t union_length(interval_t *iv, size_t n)
{
    if (!n)
        return 0;
    qsort(iv, n, sizeof *iv, cmp_interval);
    uint64_t total = 0, a = iv[0].a, b = iv[0].b;
    for (size_t k = 1; k < n; k++) {
        if (iv[k].a <= b) {
            if (iv[k].b > b)
                b = iv[k].b;
            continue;
        }
        total += b - a;
        a = iv[k].a;
        b = iv[k].b;
    }
    return total + (b - a);
}

static int link_and_collective_figures(model_t *m)
{
    trc_report_t *rep = m->rep;
    for (size_t i = 0; i < m->nlinks; i++) {
        rlink_t *l = &m->links[i];
        trc_report_link_t *o = trc_report_add_link(rep);
        if (!o)
            return -1;
        o->from_chip = l->from;
        o->to_chip = l->to;
        o->gbps = l->gbps;
        o->transfers = l->transfers;
        o->bytes = l->bytes;
        o->busy_ps = union_length(l->iv, l->niv);
    }
    for (size_t i = 0; i < m->ncolls; i++) {
        const rcoll_t *c = &m->colls[i];
        trc_report_collective_t *o = add_coll(rep);
        if (!o)
            return -1;
        o->id = c->id;
        snprintf(o->op, sizeof o->op, "%s", str_of(m, c->op));
        snprintf(o->group, sizeof o->group, "%s", str_of(m, c->group));
        snprintf(o->algorithm, sizeof o->algorithm, "%s", str_of(m, c->algorithm));
        o->members = c->members;
        o->size = c->size;
        int first = 1;
        /* data time per bottleneck resource: small lists, linear search */
        uint32_t names[64];
        uint64_t times[64];
        unsigned nnames = 0;
        for (uint32_t k = 0; k < c->nsteps; k++) {
            const rstep_t *st = &c->steps[k];
            if (!st->seen)
                continue;
            o->steps++;
            if (first || st->start < o->start_ps)
                o->start_ps = st->start;
            if (first || st->end > o->end_ps)
                o->end_ps = st->end;
            first = 0;
            o->latency_ps += st->latency;
            uint64_t data = st->end - st->start - st->latency;
            o->data_ps += data;
            if (!st->bottleneck)
                continue;
            unsigned j = 0;
            while (j < nnames && names[j] != st->bottleneck)
                j++;
            if (j == nnames && nnames < 64) {
                names[nnames] = st->bottleneck;
                times[nnames++] = 0;
            }
            if (j < nnames)
                times[j] += data;
        }
        for (unsigned j = 0; j < nnames; j++)
            if (times[j] > o->bottleneck_ps || !o->bottleneck[0]) {
                o->bottleneck_ps = times[j];
                snprintf(o->bottleneck, sizeof o->bottleneck, "%s", str_of(m, names[j]));
            }
    }
    return 0;
}

/* ---- critical path ---------------------------------------------------------------------------- */

typedef struct pstep {
    uint32_t slice;
    uint64_t release; /* when it released the next step */
    int via;          /* how it was reached from its predecessor (VIA_*) */
    uint32_t pred_sem;
} pstep_t;

enum { VIA_START, VIA_ENGINE, VIA_SEMAPHORE, VIA_QUEUE, VIA_ISSUE };

/* Below this efficiency the piece size, not the engines' bandwidth, is what to fix. */
#define GOOD_EFFICIENCY 0.8

/* A DMA step's category, from what set its rate and its piece efficiency. */
static void dma_bound(const char *limit, double efficiency, const char **what,
                      const char **hint)
{
    if (strcmp(limit, "HBM") == 0) {
        *what = "HBM";
        *hint = HINT_HBM;
    } else if (strcmp(limit, "NeuronLink") == 0) {
        *what = "a NeuronLink";
        *hint = HINT_LINK;
    } else if (strcmp(limit, "own cap") == 0) {
        *what = "DMA queues (per-transfer cap)";
        *hint = HINT_DMA_OWN;
    } else if (efficiency > 0 && efficiency >= GOOD_EFFICIENCY) {
        *what = "DMA engines (bandwidth)";
        *hint = HINT_DMA_BW;
    } else {
        *what = "DMA engines (piece efficiency)";
        *hint = HINT_DMA_ENGINES;
    }
}

/*
 * The verdict's candidates from the critical path: each step's time [start, release) and the
 * gap before it go to what explains them -- an engine's II, a transfer's rate limit, DMA
 * fixed cost and queueing (gaps before a transfer), or the semaphore chain (completion
 * latency a waiting engine sat through, and the wake-up gaps after posts).
 */
static int path_bounds(model_t *m, const pstep_t *steps, size_t n)
{
    trc_report_t *rep = m->rep;
    rep->bounds_from_path = 1;
    rep->bounds_of_ps = rep->path_end_ps;
    char what[64];
    /* transfers limited by the DMA engines are one candidate; whether their pieces or the
     * engines' bandwidth is the matter follows from their time-weighted efficiency */
    uint64_t engines_ps = 0;
    double engines_eff = 0;
    int engines_eff_known = 1;
    for (size_t k = 0; k < n; k++) {
        const rs_t *x = &m->sl[steps[k].slice];
        const rtrack_t *t = &m->tracks[x->track];
        uint64_t rel = steps[k].release;
        uint64_t span = rel > x->ts ? rel - x->ts : 0;
        int next_via = k ? steps[k - 1].via : VIA_ENGINE;
        int err = 0;
        snprintf(what, sizeof what, "engine %s", t->name);
        if (x->kind == TRC_SLICE_INSTR) {
            uint64_t busy = span < x->dur ? span : x->dur;
            err |= trc_report_bound_add(rep, what, busy, engine_hint(t->name));
            if (next_via == VIA_SEMAPHORE)
                err |= trc_report_bound_add(rep, "a chain of semaphore waits", span - busy,
                                            HINT_SYNC);
            else
                err |= trc_report_bound_add(rep, what, span - busy, engine_hint(t->name));
        } else {
            const char *w, *h;
            dma_bound(str_of(m, x->limit), x->efficiency, &w, &h);
            if (strncmp(w, "DMA engines", 11) == 0) {
                engines_ps += span;
                engines_eff += x->efficiency * (double)span;
                engines_eff_known &= x->efficiency > 0;
            } else {
                err |= trc_report_bound_add(rep, w, span, h);
            }
        }
        uint64_t prev = k + 1 < n ? steps[k + 1].release : 0;
        uint64_t gap = x->ts > prev ? x->ts - prev : 0;
        switch (steps[k].via) {
        case VIA_ISSUE:
        case VIA_QUEUE:
            err |= trc_report_bound_add(rep, "DMA fixed cost and queueing", gap, HINT_FIXED);
            break;
        case VIA_SEMAPHORE:
            err |= trc_report_bound_add(rep, "a chain of semaphore waits", gap, HINT_SYNC);
            break;
        default:
            err |= trc_report_bound_add(rep, what, gap, engine_hint(t->name));
            break;
        }
        if (err)
            return -1;
    }
    if (engines_ps) {
        const char *w, *h;
        double eff = engines_eff_known ? engines_eff / (double)engines_ps : 0.0;
        dma_bound("DMA engines", eff, &w, &h);
        if (trc_report_bound_add(rep, w, engines_ps, h))
            return -1;
    }
    return 0;
}

static int critical_path(model_t *m)
{
    trc_report_t *rep = m->rep;
    if (!m->nsl)
        return 0;
    /* position of each slice in its track */
    uint32_t *pos = malloc(m->nsl * sizeof *pos);
    pstep_t *steps = malloc(m->nsl * sizeof *steps);
    if (!pos || !steps) {
        free(pos);
        free(steps);
        return -1;
    }
    for (size_t k = 0; k < m->ntracks; k++)
        for (size_t i = 0; i < m->tracks[k].n; i++)
            pos[m->tracks[k].s[i]] = (uint32_t)i;
    size_t last = 0;
    for (size_t i = 1; i < m->nsl; i++)
        if (m->sl[i].end > m->sl[last].end)
            last = i;
    rep->have_path = 1;
    rep->path_end_ps = m->sl[last].end;
    size_t n = 0;
    uint64_t cur = last, release = m->sl[last].end;
    for (;;) {
        const rs_t *x = &m->sl[cur];
        pstep_t *st = &steps[n++];
        st->slice = (uint32_t)cur;
        st->release = release;
        st->via = VIA_START;
        if (n == m->nsl)
            break;
        const rtrack_t *t = &m->tracks[x->track];
        uint32_t p = pos[cur];
        int64_t best = -1;
        uint64_t best_t = 0;
        int via = VIA_START;
        if (x->kind == TRC_SLICE_INSTR) {
            if (p > 0) {
                const rs_t *prev = &m->sl[t->s[p - 1]];
                uint64_t r = x->wait[TRC_STALL_INTERLOCK] ? prev->end : prev->ts + prev->dur;
                best = t->s[p - 1];
                best_t = r;
                via = VIA_ENGINE;
            }
            if (x->sem_pred >= 0 && (best < 0 || m->sl[x->sem_pred].end >= best_t)) {
                best = x->sem_pred;
                best_t = m->sl[x->sem_pred].end;
                via = VIA_SEMAPHORE;
            }
        } else {
            const rs_t *prev = p > 0 ? &m->sl[t->s[p - 1]] : NULL;
            if (prev && prev->ts + prev->dur == x->ts) {
                best = t->s[p - 1];
                best_t = x->ts;
                via = VIA_QUEUE;
            } else if (x->dma_pred >= 0) {
                best = x->dma_pred;
                best_t = m->sl[x->dma_pred].ts;
                via = VIA_ISSUE;
            }
        }
        if (best < 0)
            break;
        if (best_t > x->ts)
            best_t = x->ts; /* never later than the step it released */
        st->via = via;
        st->pred_sem = x->sem;
        cur = (uint64_t)best;
        release = best_t;
    }
    free(pos);
    /* chronological runs of steps on the same track */
    for (size_t k = n; k-- > 0;) {
        const pstep_t *st = &steps[k];
        const rs_t *x = &m->sl[st->slice];
        const rtrack_t *t = &m->tracks[x->track];
        /* waiting before this step: from the previous step's release (or 0) to its start */
        uint64_t prev_release = k + 1 < n ? steps[k + 1].release : 0;
        uint64_t wait = x->ts > prev_release ? x->ts - prev_release : 0;
        rep->path_wait_ps += wait;
        trc_report_step_t *run = rep->npath ? &rep->path[rep->npath - 1] : NULL;
        /* steps[k] was reached from steps[k + 1] through steps[k].via: engine and queue
         * order continue a run on the same track */
        int same = run && (steps[k].via == VIA_ENGINE || steps[k].via == VIA_QUEUE);
        if (!same) {
            run = add_step(rep);
            if (!run) {
                free(steps);
                return -1;
            }
            run->core = (uint32_t)(core_of(t) < 0 ? 0 : core_of(t));
            snprintf(run->track, sizeof run->track, "%s", t->name);
            snprintf(run->what, sizeof run->what, "%s", str_of(m, x->name));
            run->start_ps = x->ts;
            run->first_index = x->index;
            switch (steps[k].via) {
            case VIA_START:
                snprintf(run->via, sizeof run->via, k + 1 == n ? "start" : "?");
                break;
            case VIA_SEMAPHORE:
                snprintf(run->via, sizeof run->via, "wait on semaphore %s",
                         str_of(m, steps[k].pred_sem));
                break;
            case VIA_ISSUE: snprintf(run->via, sizeof run->via, "issued by dma"); break;
            case VIA_QUEUE: snprintf(run->via, sizeof run->via, "queue order"); break;
            default: snprintf(run->via, sizeof run->via, "engine order"); break;
            }
            if (k + 1 == n)
                snprintf(run->via, sizeof run->via, "start of the run");
            run->wait_ps = wait;
        } else {
            run->wait_ps += wait;
            /* the distinct instruction names of the run, joined by '/' */
            const char *nm = str_of(m, x->name);
            size_t L = strlen(nm), W = strlen(run->what);
            int seen = L == 0; /* a nameless instruction (a crafted trace) adds nothing; and
                                * strstr of "" would walk past the terminator */
            for (const char *p = run->what; !seen && (p = strstr(p, nm)) != NULL; p++)
                if ((p == run->what || p[-1] == '/') && (p[L] == '/' || p[L] == '\0'))
                    seen = 1;
            if (!seen && W + L + 2 < sizeof run->what - 12)
                snprintf(run->what + W, sizeof run->what - W, "/%s", nm);
        }
        if (x->line && (!run->line_first || x->line < run->line_first))
            run->line_first = x->line;
        if (x->line > run->line_last)
            run->line_last = x->line;
        run->count++;
        run->end_ps = st->release;
        run->last_index = x->index;
        /* time on the path per track */
        trc_report_track_time_t *tt = NULL;
        for (size_t j = 0; j < rep->npath_tracks; j++)
            if (rep->path_tracks[j].core == run->core &&
                strcmp(rep->path_tracks[j].track, t->name) == 0)
                tt = &rep->path_tracks[j];
        if (!tt) {
            tt = add_track_time(rep);
            if (!tt) {
                free(steps);
                return -1;
            }
            tt->core = run->core;
            snprintf(tt->track, sizeof tt->track, "%s", t->name);
        }
        tt->ps += st->release > x->ts ? st->release - x->ts : 0;
    }
    if (path_bounds(m, steps, n)) {
        free(steps);
        return -1;
    }
    free(steps);
    for (size_t j = 0; j < rep->npath; j++) {
        trc_report_step_t *run = &rep->path[j];
        if (run->count > 1) {
            size_t L = strlen(run->what);
            snprintf(run->what + L, sizeof run->what - L, " x%llu",
                     (unsigned long long)run->count);
        }
    }
    return 0;
}

/* The per-line profile from the slices: instructions by their line, transfers by their dma
 * instruction's line. */
static int lines_from_slices(model_t *m)
{
    uint32_t max = 0;
    for (size_t i = 0; i < m->nsl; i++)
        if (m->sl[i].line > max)
            max = m->sl[i].line;
    if (!m->nsl)
        return 0;
    trc_report_line_t *dense = calloc((size_t)max + 1, sizeof *dense);
    if (!dense)
        return -1;
    for (size_t i = 0; i < m->nsl; i++) {
        const rs_t *x = &m->sl[i];
        trc_report_line_t *l = &dense[x->line];
        if (x->kind == TRC_SLICE_INSTR) {
            l->instructions++;
            l->busy_ps += x->dur;
            for (int c = 0; c < TRC_STALL_COUNT; c++)
                l->stall_by[c] += x->wait[c];
        } else {
            l->transfers++;
            l->dma_bytes += x->bytes;
            l->dma_ps += x->dur;
            l->dma_wait_ps += x->queued;
        }
    }
    int rc = 0;
    for (uint32_t k = 0; k <= max && !rc; k++) {
        if (!dense[k].instructions && !dense[k].transfers)
            continue;
        trc_report_line_t *l = trc_report_line(m->rep, k);
        if (!l) {
            rc = -1;
            break;
        }
        *l = dense[k];
        l->line = k;
    }
    free(dense);
    return rc;
}

ncsim_status_t trc_report_from_trace(const char *path, trc_report_t *rep, char *err,
                                     size_t errlen)
{
    memset(rep, 0, sizeof *rep);
    rep->from_trace = 1;
    snprintf(rep->source, sizeof rep->source, "%s", path);
    model_t m;
    memset(&m, 0, sizeof m);
    m.rep = rep;
    /* the report describes transfers from their numbers: no breakdown text needed */
    ncsim_status_t st = trc_read_flags(path, TRC_READ_NO_DMA_TEXT, on_record, &m, err, errlen);
    if (st == NCSIM_OK && m.oom) {
        st = NCSIM_NOMEM;
        snprintf(err, errlen, "out of memory");
    }
    if (st == NCSIM_OK && !m.have_run) {
        st = NCSIM_FORMAT;
        snprintf(err, errlen, "%s: not an ncsim trace (no run information)", path);
    }
    rtrack_t **order = NULL;
    if (st == NCSIM_OK) {
        order = malloc((m.ntracks + 1) * sizeof *order);
        if (!order)
            st = NCSIM_NOMEM;
    }
    if (st == NCSIM_OK) {
        sort_base = m.sl;
        for (size_t k = 0; k < m.ntracks; k++) {
            if (m.tracks[k].unsorted)
                qsort(m.tracks[k].s, m.tracks[k].n, sizeof *m.tracks[k].s, cmp_slice_ix);
            order[k] = &m.tracks[k];
        }
        qsort(order, m.ntracks, sizeof *order, cmp_track_ptr);
        resolve_flows(&m);
        uint64_t total = 0;
        for (size_t i = 0; i < m.nsl; i++)
            if (m.sl[i].end > total)
                total = m.sl[i].end;
        rep->total_ps = total;
        uint64_t cores_seen = 0;
        int64_t last_core = -1;
        for (size_t k = 0; k < m.ntracks && st == NCSIM_OK; k++) {
            rtrack_t *t = order[k];
            if (trc_track_kind_of_tid(t->tid, NULL) != TRC_TRACK_ENGINE || !t->n)
                continue;
            if (core_of(t) != last_core) {
                last_core = core_of(t);
                cores_seen++;
            }
            if (engine_and_kinds(&m, t))
                st = NCSIM_NOMEM;
        }
        rep->cores_used = cores_seen;
        rep->have_hw_flops = 1;
        for (size_t k = 0; k < m.ntracks && st == NCSIM_OK; k++) {
            rtrack_t *t = order[k];
            trc_track_kind_t kind = trc_track_kind_of_tid(t->tid, NULL);
            if (kind == TRC_TRACK_ENGINE && merge_kinds(&m, t, t->name))
                st = NCSIM_NOMEM;
        }
        for (size_t k = 0; k < m.ntracks && st == NCSIM_OK; k++) {
            rtrack_t *t = order[k];
            if (trc_track_kind_of_tid(t->tid, NULL) != TRC_TRACK_DMA_QUEUE)
                continue;
            for (size_t i = 0; i < t->n && st == NCSIM_OK; i++)
                if (kind_add(t, &m.sl[t->s[i]]))
                    st = NCSIM_NOMEM;
            if (st == NCSIM_OK && merge_kinds(&m, t, "dma"))
                st = NCSIM_NOMEM;
        }
        if (st == NCSIM_OK && dma_figures(&m, order, m.ntracks))
            st = NCSIM_NOMEM;
        if (st == NCSIM_OK && link_and_collective_figures(&m))
            st = NCSIM_NOMEM;
        if (st == NCSIM_OK && critical_path(&m))
            st = NCSIM_NOMEM;
        if (st == NCSIM_OK && lines_from_slices(&m))
            st = NCSIM_NOMEM;
        if (st == NCSIM_NOMEM)
            snprintf(err, errlen, "out of memory");
        if (m.window_start || m.window_end || m.engines[0]) {
            char what[200] = "";
            size_t L = 0;
            if (m.window_start)
                L += (size_t)snprintf(what + L, sizeof what - L, " --trace-start %.3f",
                                      (double)m.window_start / 1e3);
            if (m.window_end && L < sizeof what)
                L += (size_t)snprintf(what + L, sizeof what - L, " --trace-end %.3f",
                                      (double)m.window_end / 1e3);
            if (m.engines[0] && L < sizeof what)
                snprintf(what + L, sizeof what - L, " --trace-engines %s", m.engines);
            trc_report_note(rep, "the trace holds part of the run (%s): the figures describe "
                                 "what it holds",
                            what + 1);
        }
        trc_report_finish(rep);
    }
    free(order);
    for (size_t k = 0; k < m.ntracks; k++) {
        free(m.tracks[k].s);
        free(m.tracks[k].stalls);
        free(m.tracks[k].kinds);
    }
    free(m.tracks);
    free(m.index);
    free(m.sl);
    free(m.flows);
    for (size_t i = 0; i < m.nlinks; i++)
        free(m.links[i].iv);
    free(m.links);
    for (size_t i = 0; i < m.ncolls; i++)
        free(m.colls[i].steps);
    free(m.colls);
    for (size_t i = 1; i < m.nstr; i++)
        free(m.str[i]);
    free(m.str);
    free(m.strix);
    if (st != NCSIM_OK)
        trc_report_free(rep);
    return st;
}

/* ---- text ------------------------------------------------------------------------------------------- */

/* ps as nanoseconds with three decimals, exactly. */
static const char *ns3(char *buf, size_t n, uint64_t ps)
{
    snprintf(buf, n, "%llu.%03llu", (unsigned long long)(ps / 1000),
             (unsigned long long)(ps % 1000));
    return buf;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0.0;
}

static double gbps(uint64_t bytes, uint64_t ps)
{
    return ps ? (double)bytes / (double)ps * 1000.0 : 0.0; /* bytes/ps -> GB/s */
}

static uint64_t dma_bytes_total(const trc_report_t *r)
{
    uint64_t b = 0;
    for (size_t i = 0; i < r->ndma; i++)
        b += r->dma[i].bytes;
    return b;
}

static double peak_flops(const trc_report_t *r, double seconds)
{
    return r->peak_flops_per_core * (double)r->cores_used * seconds;
}

#define SHOWN_STALLS 10
#define SHOWN_RUNS 40
#define SHOWN_COLLS 20

/* Bus bandwidth factor (the usual convention): the bandwidth each member's link would need
 * for a ring to reach the collective's time is algbw times this. */
static double busbw_factor(const trc_report_collective_t *c)
{
    double n = (double)(c->members ? c->members : 1);
    if (strcmp(c->op, "all_reduce") == 0)
        return 2.0 * (n - 1.0) / n;
    if (strcmp(c->op, "send") == 0 || strcmp(c->op, "recv") == 0)
        return 1.0;
    return (n - 1.0) / n;
}

static void print_links_and_collectives(FILE *out, const trc_report_t *r)
{
    char a[40], b[40];
    double total = (double)r->total_ps;
    if (r->nlinks) {
        fprintf(out, "\nNeuronLinks (per direction; busy: at least one chunk crossing; "
                     "utilisation: achieved over capacity for the total time)\n");
        fprintf(out, "  link     transfers           bytes       busy (ns)  busy (%%)  achieved "
                     "(GB/s)  while busy (GB/s)  capacity (GB/s)  utilisation (%%)\n");
        for (size_t i = 0; i < r->nlinks; i++) {
            const trc_report_link_t *l = &r->links[i];
            char link[24], n[24];
            snprintf(link, sizeof link, "%u->%u", l->from_chip, l->to_chip);
            if (l->transfers)
                snprintf(n, sizeof n, "%llu", (unsigned long long)l->transfers);
            else
                snprintf(n, sizeof n, "-");
            double ach = gbps(l->bytes, r->total_ps);
            fprintf(out, "  %-7s  %9s  %14llu  %14s  %8.1f  %15.1f  %17.1f  %15.1f  %15.1f\n",
                    link, n, (unsigned long long)l->bytes, ns3(a, sizeof a, l->busy_ps),
                    pct((double)l->busy_ps, total), ach, gbps(l->bytes, l->busy_ps), l->gbps,
                    pct(ach, l->gbps));
        }
    }
    if (r->ncolls) {
        uint64_t sum = 0;
        for (size_t i = 0; i < r->ncolls; i++)
            sum += r->colls[i].end_ps - r->colls[i].start_ps;
        fprintf(out, "\ncollectives: %zu, %s ns in total (algbw: bytes / time; busbw: algbw x "
                     "the ring factor; latency: fixed step latencies; bottleneck: the resource "
                     "busiest in the steps, with its share of their data time)\n",
                r->ncolls, ns3(a, sizeof a, sum));
        fprintf(out, "     id  collective      group         members  algorithm  steps           "
                     "bytes       time (ns)  algbw (GB/s)  busbw (GB/s)  latency (%%)  "
                     "bottleneck\n");
        for (size_t i = 0; i < r->ncolls; i++) {
            if (r->ncolls > SHOWN_COLLS && i == SHOWN_COLLS) {
                fprintf(out, "  ... %zu more (--json has them all) ...\n", r->ncolls - SHOWN_COLLS);
                break;
            }
            const trc_report_collective_t *c = &r->colls[i];
            uint64_t t = c->end_ps - c->start_ps;
            double alg = gbps(c->size, t);
            char bn[96];
            if (c->bottleneck[0])
                snprintf(bn, sizeof bn, "%s (%.1f %%)", c->bottleneck,
                         pct((double)c->bottleneck_ps, (double)c->data_ps));
            else
                snprintf(bn, sizeof bn, "-");
            fprintf(out, "  %5llu  %-14s  %-12s  %7u  %-9s  %5u  %14llu  %14s  %12.1f  %12.1f  "
                         "%11.1f  %s\n",
                    (unsigned long long)c->id, c->op, c->group[0] ? c->group : "-", c->members,
                    c->algorithm, c->steps, (unsigned long long)c->size, ns3(b, sizeof b, t),
                    alg, alg * busbw_factor(c), pct((double)c->latency_ps, (double)t), bn);
        }
    }
}

void trc_report_print(FILE *out, const trc_report_t *r)
{
    char a[40], b[40], c[40], w[40];
    double total = (double)r->total_ps;
    fprintf(out, "ncsim report: %s (%s)\n", r->source,
            r->from_trace ? "trace" : "statistics file");
    fprintf(out, "program: %s; architecture: %s; %llu chip%s, %llu core%s used\n",
            r->program[0] ? r->program : "?", r->arch[0] ? r->arch : "?",
            (unsigned long long)r->chips, r->chips == 1 ? "" : "s",
            (unsigned long long)r->cores_used, r->cores_used == 1 ? "" : "s");
    if (r->failed[0])
        fprintf(out, "RUN FAILED: %s\n(the figures below cover the run up to the failure)\n",
                r->failed);
    for (int i = 0; i < r->nnotes; i++)
        fprintf(out, "note: %s\n", r->notes[i]);
    fprintf(out, "total time: %s ns (%.3f us)\n", ns3(a, sizeof a, r->total_ps),
            total / 1e6);
    char verdict[600];
    trc_report_verdict(r, verdict, sizeof verdict);
    if (verdict[0])
        fprintf(out, "verdict: %s\n", verdict);

    fprintf(out, "\nengines: busy (executing) + stall (ready but held) + idle = 100%% of the "
                 "total time\n");
    fprintf(out, "  core  engine  instructions       busy (ns)  busy (%%)      stall (ns)  "
                 "stall (%%)  idle (%%)\n");
    for (size_t i = 0; i < r->nengines; i++) {
        const trc_report_engine_t *e = &r->engines[i];
        double idle = 100.0 - pct((double)e->busy_ps, total) - pct((double)e->stall_ps, total);
        fprintf(out, "  %4u  %-6s  %12llu  %14s  %8.1f  %14s  %9.1f  %8.1f\n", e->core, e->name,
                (unsigned long long)e->instructions, ns3(a, sizeof a, e->busy_ps),
                pct((double)e->busy_ps, total), ns3(b, sizeof b, e->stall_ps),
                pct((double)e->stall_ps, total), idle < 0 ? 0.0 : idle);
    }

    fprintf(out, "\nDMA per core (peak %.1f GB/s per core)\n", r->dma_peak_gbps_per_core);
    if (!r->ndma)
        fprintf(out, "  no DMA transfers\n");
    else
        fprintf(out, "  core  transfers           bytes       busy (ns)  busy (%%)  achieved "
                     "(GB/s)  while busy (GB/s)  of peak (%%)\n");
    for (size_t i = 0; i < r->ndma; i++) {
        const trc_report_dma_t *d = &r->dma[i];
        double ach = gbps(d->bytes, r->total_ps);
        fprintf(out, "  %4u  %9llu  %14llu  %14s  %8.1f  %15.1f  %17.1f  %11.1f\n", d->core,
                (unsigned long long)d->transfers, (unsigned long long)d->bytes,
                ns3(a, sizeof a, d->busy_ps), pct((double)d->busy_ps, total), ach,
                gbps(d->bytes, d->busy_ps), pct(ach, r->dma_peak_gbps_per_core));
    }

    double secs = total * 1e-12;
    fprintf(out, "\ncompute (tensor engine; peak %.3f TFLOP/s bf16 per core x %llu core%s)\n",
            r->peak_flops_per_core / 1e12, (unsigned long long)r->cores_used,
            r->cores_used == 1 ? "" : "s");
    fprintf(out, "  useful FLOPs: %llu FLOP; MFU %.1f %%\n", (unsigned long long)r->flops,
            pct((double)r->flops, peak_flops(r, secs)));
    if (r->have_hw_flops)
        fprintf(out, "  all PE FLOPs (transposes included): %llu FLOP; HFU %.1f %%\n",
                (unsigned long long)r->hw_flops, pct((double)r->hw_flops, peak_flops(r, secs)));
    else
        fprintf(out, "  HFU: not in this statistics file\n");

    uint64_t hbm = r->hbm_read + r->hbm_write;
    fprintf(out, "\nmemory\n");
    fprintf(out, "  HBM: %llu bytes read, %llu bytes written; %.1f GB/s achieved of %.1f GB/s "
                 "peak (%.1f %%)\n",
            (unsigned long long)r->hbm_read, (unsigned long long)r->hbm_write,
            gbps(hbm, r->total_ps), r->hbm_peak_gbps,
            pct(gbps(hbm, r->total_ps), r->hbm_peak_gbps));
    uint64_t dmab = dma_bytes_total(r);
    double dpeak = r->dma_peak_gbps_per_core * (double)(r->ndma ? r->ndma : 1);
    fprintf(out, "  DMA: %llu bytes moved; %.1f GB/s achieved of %.1f GB/s peak (%zu core%s, "
                 "%.1f %%)\n",
            (unsigned long long)dmab, gbps(dmab, r->total_ps), dpeak, r->ndma ? r->ndma : 1,
            r->ndma == 1 || !r->ndma ? "" : "s", pct(gbps(dmab, r->total_ps), dpeak));

    print_links_and_collectives(out, r);

    fprintf(out, "\ntop stall causes (time an engine was ready but held)\n");
    if (!r->nstalls)
        fprintf(out, "  none\n");
    else
        fprintf(out, "   #  core  engine  cause                                      time (ns)  "
                     "of total (%%)  instructions\n");
    for (size_t i = 0; i < r->nstalls && i < SHOWN_STALLS; i++) {
        const trc_report_stall_t *s = &r->stalls[i];
        char n[32];
        if (s->instructions)
            snprintf(n, sizeof n, "%llu", (unsigned long long)s->instructions);
        else
            snprintf(n, sizeof n, "-");
        fprintf(out, "  %2zu  %4u  %-6s  %-38s  %13s  %12.1f  %12s\n", i + 1, s->core,
                s->engine, s->cause, ns3(a, sizeof a, s->ps), pct((double)s->ps, total), n);
    }

    fprintf(out, "\ncritical path (the chain of instructions and waits that sets the end time)\n");
    if (!r->have_path) {
        fprintf(out, "  not available from a statistics file: run with --trace FILE and "
                     "report on the trace\n");
    } else {
        fprintf(out, "  ends at %s ns; waiting on the path: %s ns (%.1f %%)\n",
                ns3(a, sizeof a, r->path_end_ps), ns3(b, sizeof b, r->path_wait_ps),
                pct((double)r->path_wait_ps, (double)r->path_end_ps));
        fprintf(out, "  time on the path by track:");
        for (size_t i = 0; i < r->npath_tracks; i++)
            fprintf(out, "%s core %u %s %s ns (%.1f %%)", i ? "," : "", r->path_tracks[i].core,
                    r->path_tracks[i].track, ns3(a, sizeof a, r->path_tracks[i].ps),
                    pct((double)r->path_tracks[i].ps, (double)r->path_end_ps));
        fprintf(out, "\n");
        fprintf(out, "      start (ns)        end (ns)     length (ns)  wait (ns)  core  track   "
                     "what                    lines      reached by\n");
        for (size_t i = 0; i < r->npath; i++) {
            if (r->npath > SHOWN_RUNS && i == SHOWN_RUNS / 2) {
                fprintf(out, "  ... %zu runs not shown (--json has them all) ...\n",
                        r->npath - SHOWN_RUNS);
                i = r->npath - SHOWN_RUNS / 2;
            }
            const trc_report_step_t *s = &r->path[i];
            char lines[32];
            if (s->line_first == s->line_last)
                snprintf(lines, sizeof lines, "%u", s->line_first);
            else
                snprintf(lines, sizeof lines, "%u-%u", s->line_first, s->line_last);
            fprintf(out, "  %14s  %14s  %14s  %9s  %4u  %-6s  %-22s  %-9s  %s\n",
                    ns3(a, sizeof a, s->start_ps), ns3(b, sizeof b, s->end_ps),
                    ns3(c, sizeof c, s->end_ps - s->start_ps),
                    ns3(w, sizeof w, s->wait_ps), s->core, s->track,
                    s->what, lines, s->via);
        }
    }

    fprintf(out, "\ninstruction kinds\n");
    if (!r->nkinds) {
        fprintf(out, "  not available from a statistics file: run with --trace FILE and "
                     "report on the trace\n");
    } else {
        fprintf(out, "  engine  instruction        count       busy (ns)  mean II (ns)  "
                     "mean latency (ns)       wait (ns)            FLOPs           bytes\n");
        for (size_t i = 0; i < r->nkinds; i++) {
            const trc_report_kind_t *k = &r->kinds[i];
            double n = (double)(k->count ? k->count : 1);
            fprintf(out, "  %-6s  %-15s  %8llu  %14s  %12.3f  %17.3f  %14s  %15llu  %14llu\n",
                    k->engine, k->name, (unsigned long long)k->count,
                    ns3(a, sizeof a, k->busy_ps), (double)k->busy_ps / 1000.0 / n,
                    (double)k->latency_ps / 1000.0 / n, ns3(b, sizeof b, k->wait_ps),
                    (unsigned long long)k->flops, (unsigned long long)k->bytes);
        }
        int any = 0;
        for (size_t i = 0; i < r->nkinds; i++) {
            const trc_report_kind_t *k = &r->kinds[i];
            if (!k->cost[0])
                continue;
            if (!any)
                fprintf(out, "\nwhat each kind costs (the breakdown of the instances that took "
                             "most of its busy time)\n");
            any = 1;
            fprintf(out, "  %-6s %-15s %5.1f %% of its busy time: %s\n", k->engine, k->name,
                    pct((double)k->cost_busy_ps, (double)k->busy_ps), k->cost);
        }
    }
}

/* ---- JSON ------------------------------------------------------------------------------------------- */

static void jkey(yajl_gen g, const char *k)
{
    yajl_gen_string(g, (const unsigned char *)k, strlen(k));
}

static void jstr(yajl_gen g, const char *k, const char *v)
{
    jkey(g, k);
    yajl_gen_string(g, (const unsigned char *)v, strlen(v));
}

static void jint(yajl_gen g, const char *k, uint64_t v)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    jkey(g, k);
    yajl_gen_number(g, buf, (size_t)n);
}

static void jns(yajl_gen g, const char *k, uint64_t ps)
{
    char buf[40];
    ns3(buf, sizeof buf, ps);
    jkey(g, k);
    yajl_gen_number(g, buf, strlen(buf));
}

static void jreal(yajl_gen g, const char *k, double v, int decimals)
{
    char buf[64];
    if (!isfinite(v))
        v = 0;
    int n = snprintf(buf, sizeof buf, "%.*f", decimals, v);
    if (n < 0 || (size_t)n >= sizeof buf) /* a huge value (a crafted trace): exponent form */
        n = snprintf(buf, sizeof buf, "%.17g", v);
    jkey(g, k);
    yajl_gen_number(g, buf, (size_t)n);
}

char *trc_report_json(const trc_report_t *r)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (!g)
        return NULL;
    yajl_gen_config(g, yajl_gen_beautify, 1);
    yajl_gen_config(g, yajl_gen_indent_string, "  ");
    double total = (double)r->total_ps, secs = total * 1e-12;
    yajl_gen_map_open(g);
    jstr(g, "source", r->source);
    jstr(g, "source_kind", r->from_trace ? "trace" : "statistics");
    jstr(g, "status", r->failed[0] ? "error" : "ok");
    if (r->failed[0])
        jstr(g, "error", r->failed);
    jstr(g, "program", r->program);
    jstr(g, "arch", r->arch);
    jint(g, "chips", r->chips);
    jint(g, "cores_used", r->cores_used);
    jns(g, "total_ns", r->total_ps);
    char verdict[600];
    trc_report_verdict(r, verdict, sizeof verdict);
    jstr(g, "verdict", verdict);
    jkey(g, "bounds");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nbounds; i++) {
        yajl_gen_map_open(g);
        jstr(g, "what", r->bounds[i].what);
        jns(g, "time_ns", r->bounds[i].ps);
        jreal(g, "share_pct", pct((double)r->bounds[i].ps, (double)r->bounds_of_ps), 3);
        jstr(g, "of", r->bounds_from_path ? "critical path" : "total time (busy)");
        jstr(g, "hint", r->bounds[i].hint);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    jkey(g, "notes");
    yajl_gen_array_open(g);
    for (int i = 0; i < r->nnotes; i++)
        yajl_gen_string(g, (const unsigned char *)r->notes[i], strlen(r->notes[i]));
    yajl_gen_array_close(g);

    jkey(g, "engines");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nengines; i++) {
        const trc_report_engine_t *e = &r->engines[i];
        double idle = 100.0 - pct((double)e->busy_ps, total) - pct((double)e->stall_ps, total);
        yajl_gen_map_open(g);
        jint(g, "core", e->core);
        jstr(g, "engine", e->name);
        jint(g, "instructions", e->instructions);
        jns(g, "busy_ns", e->busy_ps);
        jreal(g, "busy_pct", pct((double)e->busy_ps, total), 3);
        jns(g, "stall_ns", e->stall_ps);
        jreal(g, "stall_pct", pct((double)e->stall_ps, total), 3);
        jreal(g, "idle_pct", idle < 0 ? 0 : idle, 3);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);

    jkey(g, "dma");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->ndma; i++) {
        const trc_report_dma_t *d = &r->dma[i];
        double ach = gbps(d->bytes, r->total_ps);
        yajl_gen_map_open(g);
        jint(g, "core", d->core);
        jint(g, "transfers", d->transfers);
        jint(g, "bytes", d->bytes);
        jns(g, "busy_ns", d->busy_ps);
        jreal(g, "busy_pct", pct((double)d->busy_ps, total), 3);
        jreal(g, "achieved_gbps", ach, 3);
        jreal(g, "while_busy_gbps", gbps(d->bytes, d->busy_ps), 3);
        jreal(g, "peak_gbps", r->dma_peak_gbps_per_core, 3);
        jreal(g, "of_peak_pct", pct(ach, r->dma_peak_gbps_per_core), 3);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);

    jkey(g, "compute");
    yajl_gen_map_open(g);
    jint(g, "flops", r->flops);
    jreal(g, "mfu_pct", pct((double)r->flops, peak_flops(r, secs)), 3);
    if (r->have_hw_flops) {
        jint(g, "hw_flops", r->hw_flops);
        jreal(g, "hfu_pct", pct((double)r->hw_flops, peak_flops(r, secs)), 3);
    }
    jreal(g, "peak_flops_per_core", r->peak_flops_per_core, 0);
    yajl_gen_map_close(g);

    uint64_t hbm = r->hbm_read + r->hbm_write, dmab = dma_bytes_total(r);
    double dpeak = r->dma_peak_gbps_per_core * (double)(r->ndma ? r->ndma : 1);
    jkey(g, "hbm");
    yajl_gen_map_open(g);
    jint(g, "read_bytes", r->hbm_read);
    jint(g, "write_bytes", r->hbm_write);
    jreal(g, "achieved_gbps", gbps(hbm, r->total_ps), 3);
    jreal(g, "peak_gbps", r->hbm_peak_gbps, 3);
    jreal(g, "of_peak_pct", pct(gbps(hbm, r->total_ps), r->hbm_peak_gbps), 3);
    yajl_gen_map_close(g);
    jkey(g, "dma_total");
    yajl_gen_map_open(g);
    jint(g, "bytes", dmab);
    jreal(g, "achieved_gbps", gbps(dmab, r->total_ps), 3);
    jreal(g, "peak_gbps", dpeak, 3);
    jreal(g, "of_peak_pct", pct(gbps(dmab, r->total_ps), dpeak), 3);
    yajl_gen_map_close(g);

    jkey(g, "links");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nlinks; i++) {
        const trc_report_link_t *l = &r->links[i];
        double ach = gbps(l->bytes, r->total_ps);
        yajl_gen_map_open(g);
        jint(g, "from_chip", l->from_chip);
        jint(g, "to_chip", l->to_chip);
        if (l->transfers)
            jint(g, "transfers", l->transfers);
        jint(g, "bytes", l->bytes);
        jns(g, "busy_ns", l->busy_ps);
        jreal(g, "busy_pct", pct((double)l->busy_ps, total), 3);
        jreal(g, "achieved_gbps", ach, 3);
        jreal(g, "while_busy_gbps", gbps(l->bytes, l->busy_ps), 3);
        jreal(g, "capacity_gbps", l->gbps, 3);
        jreal(g, "utilisation_pct", pct(ach, l->gbps), 3);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);

    jkey(g, "collectives");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->ncolls; i++) {
        const trc_report_collective_t *c = &r->colls[i];
        uint64_t t = c->end_ps - c->start_ps;
        double alg = gbps(c->size, t);
        yajl_gen_map_open(g);
        jint(g, "id", c->id);
        jstr(g, "collective", c->op);
        jstr(g, "group", c->group);
        jint(g, "members", c->members);
        jstr(g, "algorithm", c->algorithm);
        jint(g, "steps", c->steps);
        jint(g, "bytes", c->size);
        jns(g, "start_ns", c->start_ps);
        jns(g, "time_ns", t);
        jreal(g, "algbw_gbps", alg, 3);
        jreal(g, "busbw_gbps", alg * busbw_factor(c), 3);
        jns(g, "latency_ns", c->latency_ps);
        jreal(g, "latency_pct", pct((double)c->latency_ps, (double)t), 3);
        jstr(g, "bottleneck", c->bottleneck);
        jreal(g, "bottleneck_pct_of_data_time",
              pct((double)c->bottleneck_ps, (double)c->data_ps), 3);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);

    jkey(g, "top_stalls");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nstalls && i < SHOWN_STALLS; i++) {
        const trc_report_stall_t *s = &r->stalls[i];
        yajl_gen_map_open(g);
        jint(g, "core", s->core);
        jstr(g, "engine", s->engine);
        jstr(g, "cause", s->cause);
        jns(g, "time_ns", s->ps);
        jreal(g, "of_total_pct", pct((double)s->ps, total), 3);
        if (s->instructions)
            jint(g, "instructions", s->instructions);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);

    jkey(g, "critical_path");
    if (!r->have_path) {
        yajl_gen_null(g);
    } else {
        yajl_gen_map_open(g);
        jns(g, "end_ns", r->path_end_ps);
        jns(g, "waiting_ns", r->path_wait_ps);
        jkey(g, "by_track");
        yajl_gen_array_open(g);
        for (size_t i = 0; i < r->npath_tracks; i++) {
            yajl_gen_map_open(g);
            jint(g, "core", r->path_tracks[i].core);
            jstr(g, "track", r->path_tracks[i].track);
            jns(g, "time_ns", r->path_tracks[i].ps);
            yajl_gen_map_close(g);
        }
        yajl_gen_array_close(g);
        jkey(g, "runs");
        yajl_gen_array_open(g);
        for (size_t i = 0; i < r->npath; i++) {
            const trc_report_step_t *s = &r->path[i];
            yajl_gen_map_open(g);
            jint(g, "core", s->core);
            jstr(g, "track", s->track);
            jstr(g, "what", s->what);
            jint(g, "count", s->count);
            jns(g, "start_ns", s->start_ps);
            jns(g, "end_ns", s->end_ps);
            jns(g, "wait_ns", s->wait_ps);
            jint(g, "first_index", s->first_index);
            jint(g, "last_index", s->last_index);
            jint(g, "first_line", s->line_first);
            jint(g, "last_line", s->line_last);
            jstr(g, "reached_by", s->via);
            yajl_gen_map_close(g);
        }
        yajl_gen_array_close(g);
        yajl_gen_map_close(g);
    }

    jkey(g, "instruction_kinds");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nkinds; i++) {
        const trc_report_kind_t *k = &r->kinds[i];
        double n = (double)(k->count ? k->count : 1);
        yajl_gen_map_open(g);
        jstr(g, "engine", k->engine);
        jstr(g, "instruction", k->name);
        jint(g, "count", k->count);
        jns(g, "busy_ns", k->busy_ps);
        jreal(g, "mean_ii_ns", (double)k->busy_ps / 1000.0 / n, 3);
        jreal(g, "mean_latency_ns", (double)k->latency_ps / 1000.0 / n, 3);
        jns(g, "wait_ns", k->wait_ps);
        jint(g, "flops", k->flops);
        jint(g, "bytes", k->bytes);
        if (k->cost[0]) {
            jstr(g, "cost", k->cost);
            jreal(g, "cost_busy_pct", pct((double)k->cost_busy_ps, (double)k->busy_ps), 3);
        }
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);

    const unsigned char *buf;
    size_t len;
    char *out = NULL;
    if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) {
        out = malloc(len + 2);
        if (out) {
            memcpy(out, buf, len);
            out[len] = '\n';
            out[len + 1] = '\0';
        }
    }
    yajl_gen_free(g);
    return out;
}

/* ---- by line ------------------------------------------------------------------------------------ */

/* Line numbers in ascending order: read_line_texts walks them with the file, once. */
static int cmp_line_ptr(const void *a, const void *b)
{
    uint32_t x = (*(trc_report_line_t *const *)a)->line, y = (*(trc_report_line_t *const *)b)->line;
    return x < y ? -1 : x > y;
}

/* The text of every profiled line from f (line 1 is f's first line), in one pass over the
 * file and the lines sorted by number (a crafted file with a million lines costs a sort, not
 * a million passes). Control characters (terminal escapes above all) become '?'. */
static void read_line_texts(trc_report_t *rep, FILE *f)
{
    trc_report_line_t **order = malloc(rep->nlines * sizeof *order);
    if (!order)
        return;
    for (size_t i = 0; i < rep->nlines; i++)
        order[i] = &rep->lines[i];
    qsort(order, rep->nlines, sizeof *order, cmp_line_ptr);
    size_t next = 0;
    while (next < rep->nlines && order[next]->line == 0)
        next++;
    char buf[4096];
    uint32_t no = 0;
    while (next < rep->nlines && fgets(buf, sizeof buf, f)) {
        size_t n = strlen(buf);
        int whole = n && buf[n - 1] == '\n';
        no++;
        for (; next < rep->nlines && order[next]->line == no; next++) {
            char *text = order[next]->text;
            const char *p = buf;
            while (*p == ' ' || *p == '\t')
                p++;
            /* keep what fits of the line (a longer line is cut, on purpose) */
            size_t len = strlen(p), cap = sizeof order[next]->text - 1;
            if (len > cap)
                len = cap;
            memcpy(text, p, len);
            text[len] = '\0';
            char *e = text + strlen(text);
            while (e > text && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' '))
                *--e = '\0';
            for (char *c = text; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                    *c = '?';
        }
        /* a line longer than the buffer: skip its rest */
        while (!whole && fgets(buf, sizeof buf, f)) {
            n = strlen(buf);
            whole = n && buf[n - 1] == '\n';
        }
    }
    free(order);
}

/* The name given by the program's first `.source NAME` directive (the rest of the line,
 * trimmed: docs/isa-notes.md), or "" when it has none. */
static void find_source_name(FILE *f, char *name, size_t cap)
{
    char buf[4096];
    name[0] = '\0';
    while (fgets(buf, sizeof buf, f)) {
        size_t n = strlen(buf);
        int whole = n && buf[n - 1] == '\n';
        const char *p = buf;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, ".source", 7) == 0 && (p[7] == ' ' || p[7] == '\t') && whole) {
            p += 8;
            while (*p == ' ' || *p == '\t')
                p++;
            size_t len = strlen(p);
            while (len && (p[len - 1] == '\n' || p[len - 1] == '\r' || p[len - 1] == ' ' ||
                           p[len - 1] == '\t'))
                len--;
            if (len && len < cap) {
                memcpy(name, p, len);
                name[len] = '\0';
                return;
            }
        }
        while (!whole && fgets(buf, sizeof buf, f)) {
            n = strlen(buf);
            whole = n && buf[n - 1] == '\n';
        }
    }
}

/* The last component of a recorded name ("" for none, or for "." and ".."). */
static const char *recorded_base(const char *name)
{
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    if (!strcmp(base, ".") || !strcmp(base, ".."))
        return "";
    return base;
}

/* DIR(rep->source)/BASE through the checked open (regular, bounded, no symbolic link);
 * NULL, with why set, when there is no such file. */
static FILE *open_beside(const trc_report_t *rep, const char *base, char *path, size_t cap,
                         char *why, size_t whylen)
{
    const char *slash = strrchr(rep->source, '/');
    int n = slash ? snprintf(path, cap, "%.*s/%s", (int)(slash - rep->source), rep->source, base)
                  : snprintf(path, cap, "%s", base);
    if (!*base || n < 0 || (size_t)n >= cap) {
        snprintf(why, whylen, "no usable file name");
        return NULL;
    }
    return isa_file_open_data(path, TRC_REPORT_MAX_SOURCE_BYTES, ISA_FILE_NO_SYMLINK, why,
                              whylen);
}

int trc_report_line_texts(trc_report_t *rep, const char *source, char *why, size_t whylen)
{
    char reason[256], path[2048];
    why[0] = '\0';
    if (!rep->nlines)
        return 0;
    if (source) {
        /* the user named the text: read it (a regular file of bounded size all the same) */
        FILE *f = isa_file_open_data(source, TRC_REPORT_MAX_SOURCE_BYTES, 0, reason,
                                     sizeof reason);
        if (!f) {
            snprintf(why, whylen, "--source %s: %s", source, reason);
            return -1;
        }
        read_line_texts(rep, f);
        fclose(f);
        return 0;
    }
    /* The recorded name (the .nca text, or the file its `.source` named, e.g. an NKI
     * kernel's Python file) is data: only its last component is used, and only beside the
     * file the user named; never a binary .ncx. */
    const char *base = recorded_base(rep->program);
    size_t L = strlen(base);
    if (!L || (L >= 4 && strcmp(base + L - 4, ".ncx") == 0)) {
        snprintf(why, whylen, "the program is %s; name its source text with --source FILE",
                 L ? "a binary .ncx" : "not recorded");
        return 1;
    }
    FILE *f = open_beside(rep, base, path, sizeof path, reason, sizeof reason);
    if (!f) {
        snprintf(why, whylen,
                 "'%s' (the program's recorded name) is not beside %s as a readable regular "
                 "file (%s); name the source text with --source FILE",
                 base, rep->source, reason);
        return 1;
    }
    /* In a .nca the line map refers to the `.source` file when the program names one (a
     * compiler's output): that file is looked for beside it the same way. When it is not
     * there, the program's own lines are shown. */
    char name[1024] = "";
    if (L >= 4 && strcmp(base + L - 4, ".nca") == 0)
        find_source_name(f, name, sizeof name);
    FILE *src = name[0] ? open_beside(rep, recorded_base(name), path, sizeof path, reason,
                                      sizeof reason)
                        : NULL;
    if (src) {
        fclose(f);
        f = src;
    } else {
        rewind(f);
    }
    read_line_texts(rep, f);
    fclose(f);
    return 0;
}

void trc_report_print_lines(FILE *out, const trc_report_t *r, size_t limit)
{
    char a[40], b[40], c[40], d[40], e[40], f[40], g[40], w[40];
    uint64_t total = 0;
    for (size_t i = 0; i < r->nlines; i++)
        total += trc_report_line_cost(&r->lines[i]);
    fprintf(out, "by source line (%s %s; sorted by cost = busy + DMA data time; line 0: "
                 "instructions with no line)\n",
            r->from_trace ? "trace" : "statistics file", r->source);
    if (!r->nlines) {
        fprintf(out, "  no per-line figures in this file\n");
        return;
    }
    fprintf(out, "   line   instrs       busy (ns)      stall (ns)  semaphore (ns)       port (ns)  "
                 "interlock (ns)  collective (ns)  transfers     DMA data (ns)   DMA wait (ns)  "
                 "cost (%%)  source\n");
    for (size_t i = 0; i < r->nlines && (!limit || i < limit); i++) {
        const trc_report_line_t *l = &r->lines[i];
        fprintf(out, "  %5u  %7llu  %14s  %14s  %14s  %14s  %14s  %15s  %9llu  %16s  %14s  %8.1f  "
                     "%s\n",
                l->line, (unsigned long long)l->instructions, ns3(a, sizeof a, l->busy_ps),
                ns3(b, sizeof b, trc_report_line_stall(l)),
                ns3(c, sizeof c, l->stall_by[TRC_STALL_SEMAPHORE]),
                ns3(d, sizeof d, l->stall_by[TRC_STALL_PORT]),
                ns3(e, sizeof e, l->stall_by[TRC_STALL_INTERLOCK]),
                ns3(f, sizeof f, l->stall_by[TRC_STALL_COLLECTIVE]),
                (unsigned long long)l->transfers, ns3(w, sizeof w, l->dma_ps),
                ns3(g, sizeof g, l->dma_wait_ps),
                pct((double)trc_report_line_cost(l), (double)total), l->text);
    }
    if (limit && r->nlines > limit)
        fprintf(out, "  ... %zu more lines (--top 0 shows all) ...\n", r->nlines - limit);
}

/* A CSV field: quoted, quotes doubled. */
static void csv_text(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

void trc_report_print_lines_csv(FILE *out, const trc_report_t *r)
{
    char a[40], b[40], c[40], d[40], e[40], f[40], w[40], x[40], y[40];
    fprintf(out, "line,instructions,busy_ns,stall_ns,semaphore_ns,port_ns,interlock_ns,"
                 "collective_ns,transfers,dma_bytes,dma_ns,dma_wait_ns,cost_ns,source\n");
    for (size_t i = 0; i < r->nlines; i++) {
        const trc_report_line_t *l = &r->lines[i];
        fprintf(out, "%u,%llu,%s,%s,%s,%s,%s,%s,%llu,%llu,%s,%s,%s,", l->line,
                (unsigned long long)l->instructions, ns3(a, sizeof a, l->busy_ps),
                ns3(b, sizeof b, trc_report_line_stall(l)),
                ns3(c, sizeof c, l->stall_by[TRC_STALL_SEMAPHORE]),
                ns3(d, sizeof d, l->stall_by[TRC_STALL_PORT]),
                ns3(e, sizeof e, l->stall_by[TRC_STALL_INTERLOCK]),
                ns3(f, sizeof f, l->stall_by[TRC_STALL_COLLECTIVE]),
                (unsigned long long)l->transfers, (unsigned long long)l->dma_bytes,
                ns3(w, sizeof w, l->dma_ps), ns3(x, sizeof x, l->dma_wait_ps),
                ns3(y, sizeof y, trc_report_line_cost(l)));
        csv_text(out, l->text);
        fputc('\n', out);
    }
}

static void lines_json(yajl_gen g, const trc_report_t *r)
{
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nlines; i++) {
        const trc_report_line_t *l = &r->lines[i];
        yajl_gen_map_open(g);
        jint(g, "line", l->line);
        jint(g, "instructions", l->instructions);
        jns(g, "busy_ns", l->busy_ps);
        jns(g, "stall_ns", trc_report_line_stall(l));
        jkey(g, "stall_by_cause_ns");
        yajl_gen_map_open(g);
        for (int c = 0; c < TRC_STALL_COUNT; c++)
            jns(g, trc_stall_key((trc_stall_t)c), l->stall_by[c]);
        yajl_gen_map_close(g);
        jint(g, "transfers", l->transfers);
        jint(g, "dma_bytes", l->dma_bytes);
        jns(g, "dma_ns", l->dma_ps);
        jns(g, "dma_wait_ns", l->dma_wait_ps);
        jns(g, "cost_ns", trc_report_line_cost(l));
        jstr(g, "source", l->text);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

char *trc_report_lines_json(const trc_report_t *r)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (!g)
        return NULL;
    yajl_gen_config(g, yajl_gen_beautify, 1);
    yajl_gen_config(g, yajl_gen_indent_string, "  ");
    yajl_gen_map_open(g);
    jstr(g, "source", r->source);
    jstr(g, "source_kind", r->from_trace ? "trace" : "statistics");
    jstr(g, "program", r->program);
    jkey(g, "lines");
    lines_json(g, r);
    yajl_gen_map_close(g);
    const unsigned char *buf;
    size_t len;
    char *out = NULL;
    if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) {
        out = malloc(len + 2);
        if (out) {
            memcpy(out, buf, len);
            out[len] = '\n';
            out[len + 1] = '\0';
        }
    }
    yajl_gen_free(g);
    return out;
}
