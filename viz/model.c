/*
 * model.c -- a trace loaded for viewing.
 *
 * traces/ hands us records one at a time (trc_read); we keep what the viewer needs in forms
 * that make drawing a frame cheap however big the trace:
 *
 *  - slices of every lane contiguous and sorted by start, in parallel arrays: start, end and
 *    the colour class per mode are the hot data a frame touches (18 bytes a slice); what only
 *    the tooltip shows lives in viz_detail_t. A frame binary-searches each lane for the
 *    visible window, so panning costs what is on screen, not what is in the file;
 *  - strings (mnemonics, operands, stall causes) interned once;
 *  - flows resolved to the slices they join, indexed by source and by destination, so that
 *    selecting an instruction finds its semaphore arrows by binary search;
 *  - an overview of the whole run (busy fraction per engine kind in 2048 buckets) for the
 *    minimap, computed once here rather than per frame.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz_internal.h"

/* ---- interned strings ------------------------------------------------------------------------ */

static uint32_t str_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* Slots hold the string's hash in the high half and id + 1 in the low half, so that a probe
 * compares text only when the hashes agree. */
static int strings_init(viz_strings_t *p)
{
    memset(p, 0, sizeof *p);
    p->cap = 1u << 16;
    p->buf = malloc(p->cap);
    p->nslots = 1u << 12;
    p->slots = calloc(p->nslots, sizeof *p->slots);
    if (!p->buf || !p->slots)
        return -1;
    p->buf[0] = 0;
    p->len = 1;
    return 0;
}

static void strings_free(viz_strings_t *p)
{
    free(p->buf);
    free(p->slots);
    memset(p, 0, sizeof *p);
}

static int strings_rehash(viz_strings_t *p)
{
    size_t ns = p->nslots * 2;
    uint64_t *s = calloc(ns, sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < p->nslots; i++) {
        if (!p->slots[i])
            continue;
        size_t j = (size_t)(p->slots[i] >> 32) & (ns - 1);
        while (s[j])
            j = (j + 1) & (ns - 1);
        s[j] = p->slots[i];
    }
    free(p->slots);
    p->slots = s;
    p->nslots = ns;
    return 0;
}

/* Id of the string s[0..n) (added when new); UINT32_MAX when out of memory or the pool
 * would pass 4 GB. */
static uint32_t strings_intern(viz_strings_t *p, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    uint32_t h = str_hash(s, n);
    size_t j = h & (p->nslots - 1);
    while (p->slots[j]) {
        if ((uint32_t)(p->slots[j] >> 32) == h) {
            const char *o = p->buf + (uint32_t)p->slots[j] - 1;
            if (memcmp(o, s, n) == 0 && o[n] == 0)
                return (uint32_t)p->slots[j] - 1;
        }
        j = (j + 1) & (p->nslots - 1);
    }
    if (p->len + n + 1 > UINT32_MAX - 1)
        return UINT32_MAX;
    if (p->len + n + 1 > p->cap) {
        size_t cap = p->cap * 2;
        while (cap < p->len + n + 1)
            cap *= 2;
        char *b = realloc(p->buf, cap);
        if (!b)
            return UINT32_MAX;
        p->buf = b;
        p->cap = cap;
    }
    uint32_t id = (uint32_t)p->len;
    memcpy(p->buf + p->len, s, n);
    p->buf[p->len + n] = 0;
    p->len += n + 1;
    p->slots[j] = (uint64_t)h << 32 | (id + 1u);
    p->count++;
    if (p->count * 2 > p->nslots && strings_rehash(p))
        return UINT32_MAX;
    return id;
}

/* ---- a small map from 64-bit keys to indices ------------------------------------------------- */

typedef struct u64map {
    uint64_t *keys;
    uint32_t *vals; /* index + 1; 0 empty */
    size_t cap, n;
} u64map_t;

static size_t u64_slot(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

static int u64map_get(const u64map_t *m, uint64_t k)
{
    if (!m->cap)
        return -1;
    for (size_t j = u64_slot(k, m->cap); m->vals[j]; j = (j + 1) & (m->cap - 1))
        if (m->keys[j] == k)
            return (int)m->vals[j] - 1;
    return -1;
}

static int u64map_put(u64map_t *m, uint64_t k, uint32_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        uint64_t *keys = calloc(cap, sizeof *keys);
        uint32_t *vals = calloc(cap, sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->vals[i])
                continue;
            size_t j = u64_slot(m->keys[i], cap);
            while (vals[j])
                j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t j = u64_slot(k, m->cap);
    while (m->vals[j] && m->keys[j] != k)
        j = (j + 1) & (m->cap - 1);
    if (!m->vals[j])
        m->n++;
    m->keys[j] = k;
    m->vals[j] = v + 1;
    return 0;
}

static void u64map_free(u64map_t *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- colours, shades, causes ----------------------------------------------------------------- */

static const uint32_t cat_rgb[VIZ_CAT_COUNT] = {
#define XX(id, name, rgb) rgb,
    VIZ_CAT_MAP(XX)
#undef XX
};
static const char *const cat_names[VIZ_CAT_COUNT] = {
#define XX(id, name, rgb) name,
    VIZ_CAT_MAP(XX)
#undef XX
};
static const uint32_t cause_rgb[VIZ_CAUSE_COUNT] = {
#define XX(id, text, rgb) rgb,
    VIZ_CAUSE_MAP(XX)
#undef XX
};
static const char *const cause_texts[VIZ_CAUSE_COUNT] = {
#define XX(id, text, rgb) text,
    VIZ_CAUSE_MAP(XX)
#undef XX
};

uint32_t viz_cat_rgb(unsigned cat)
{
    return cat < VIZ_CAT_COUNT ? cat_rgb[cat] : cat_rgb[VIZ_CAT_OTHER];
}

const char *viz_cat_name(unsigned cat)
{
    return cat < VIZ_CAT_COUNT ? cat_names[cat] : "?";
}

const char *viz_cause_text(unsigned cause)
{
    return cause < VIZ_CAUSE_COUNT ? cause_texts[cause] : "?";
}

/* Shades of one hue: the engine's colour scaled in lightness, so that the mnemonics of an
 * engine are told apart while the engine stays recognisable. */
static const int shade_pct[VIZ_SHADES] = {100, 78, 118, 88, 130, 68};

static uint8_t scale_channel(uint32_t c, int pct)
{
    int v = (int)c;
    if (pct <= 100)
        v = v * pct / 100;
    else
        v = v + (255 - v) * (pct - 100) / 60;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

uint32_t viz_class_rgb(unsigned cls)
{
    if (cls >= VIZ_CLASS_CAUSE)
        return cause_rgb[(cls - VIZ_CLASS_CAUSE) % VIZ_CAUSE_COUNT];
    unsigned cat = cls / VIZ_SHADES, shade = cls % VIZ_SHADES;
    uint32_t rgb = viz_cat_rgb(cat);
    int pct = shade_pct[shade];
    return (uint32_t)scale_channel((rgb >> 16) & 0xff, pct) << 16 |
           (uint32_t)scale_channel((rgb >> 8) & 0xff, pct) << 8 |
           scale_channel(rgb & 0xff, pct);
}

unsigned viz_name_shade(const char *name)
{
    return str_hash(name, strlen(name)) % VIZ_SHADES;
}

viz_cause_t viz_cause_of_stall(const char *stall)
{
    if (!stall || !*stall)
        return VIZ_CAUSE_NONE;
    static const struct {
        const char *prefix;
        viz_cause_t cause;
    } map[] = {{"semaphore", VIZ_CAUSE_SEMAPHORE},
               {"port", VIZ_CAUSE_PORT},
               {"interlock", VIZ_CAUSE_INTERLOCK},
               {"collective", VIZ_CAUSE_COLLECTIVE}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strncmp(stall, map[i].prefix, strlen(map[i].prefix)) == 0)
            return map[i].cause;
    return VIZ_CAUSE_OTHER;
}

/* ---- loading --------------------------------------------------------------------------------- */

typedef struct raw_flow {
    uint64_t from_ts, to_ts;
    int from_lane, to_lane;
    uint32_t name;
    uint8_t cat;
} raw_flow_t;

typedef struct loader {
    viz_trace_t *t;
    u64map_t lane_map;    /* pid << 32 | tid -> lane */
    u64map_t proc_map;    /* pid -> process */
    u64map_t counter_map; /* pid << 32 | name id -> counter */
    size_t cap_lanes, cap_procs, cap_counters, cap_slices, cap_flows;
    /* slices in file order */
    uint64_t *start, *end;
    uint32_t *lane;
    viz_detail_t *detail;
    raw_flow_t *flows;
    size_t nflows;
    int oom;
    int run_b;            /* reading B of a pair: pids, tids and chips move (viz_internal.h) */
} loader_t;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static uint32_t intern(loader_t *L, const char *s)
{
    if (!s)
        return 0;
    uint32_t id = strings_intern(&L->t->str, s, strlen(s));
    if (id == UINT32_MAX) {
        L->oom = 1;
        return 0;
    }
    return id;
}

/* Chip and core of a process from its name ("chip C core K", "chip C"), else from its pid. */
static void process_place(const viz_trace_t *t, viz_process_t *p)
{
    const char *name = viz_str(t, p->name);
    unsigned c, k;
    int used = 0;
    if (sscanf(name, "chip %u core %u%n", &c, &k, &used) == 2 && name[used] == 0) {
        p->chip = (int)c;
        p->is_core = 1;
        return;
    }
    /* "chip C" (what the cores share), "chip C links" (its NeuronLinks) */
    if (sscanf(name, "chip %u%n", &c, &used) == 1 &&
        (name[used] == 0 || strcmp(name + used, " links") == 0)) {
        p->chip = (int)c;
        p->is_core = 0;
        return;
    }
    int64_t core = trc_core_of_pid(p->pid);
    if (core >= 0) {
        p->is_core = 1;
        uint64_t per_chip = t->chips && t->cores >= t->chips ? t->cores / t->chips : 0;
        p->chip = per_chip ? (int)((uint64_t)core / per_chip) : -1;
    } else if (p->pid >= TRC_PID_CHIP_BASE && p->pid < TRC_PID_CHIP_BASE + 4096) {
        p->chip = (int)(p->pid - TRC_PID_CHIP_BASE);
        p->is_core = 0;
#ifdef TRC_PID_LINKS_BASE
    } else if (p->pid >= TRC_PID_LINKS_BASE && p->pid < TRC_PID_LINKS_BASE + 4096) {
        p->chip = (int)(p->pid - TRC_PID_LINKS_BASE);
        p->is_core = 0;
#endif
    } else {
        p->chip = -1;
        p->is_core = 0;
    }
}

static int get_process(loader_t *L, uint32_t pid)
{
    int i = u64map_get(&L->proc_map, pid);
    if (i >= 0)
        return i;
    viz_trace_t *t = L->t;
    if (grow((void **)&t->procs, &L->cap_procs, t->nprocs + 1, sizeof *t->procs) ||
        u64map_put(&L->proc_map, pid, (uint32_t)t->nprocs)) {
        L->oom = 1;
        return -1;
    }
    viz_process_t *p = &t->procs[t->nprocs];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    char name[32];
    int64_t core = trc_core_of_pid(pid);
    if (core >= 0)
        snprintf(name, sizeof name, "core %lld", (long long)core);
    else
        snprintf(name, sizeof name, "process %u", pid);
    p->name = intern(L, name);
    p->sort = (int32_t)(pid < INT32_MAX ? pid : INT32_MAX);
    process_place(t, p);
    return (int)t->nprocs++;
}

static uint8_t lane_cat(const viz_trace_t *t, const viz_lane_t *l)
{
    switch (l->kind) {
    case TRC_TRACK_DMA_QUEUE: return VIZ_CAT_DMA;
    case TRC_TRACK_LINK: return VIZ_CAT_LINK;
    case TRC_TRACK_COLLECTIVE: return VIZ_CAT_COLL;
    default: break;
    }
    const char *name = viz_str(t, l->name);
    for (unsigned c = VIZ_CAT_PE; c <= VIZ_CAT_CC; c++)
        if (strcmp(name, cat_names[c]) == 0)
            return (uint8_t)c;
    if (l->kind == TRC_TRACK_ENGINE && l->n <= VIZ_CAT_CC)
        return (uint8_t)(VIZ_CAT_PE + l->n);
    if (strncmp(name, "dma", 3) == 0)
        return VIZ_CAT_DMA;
    return VIZ_CAT_OTHER;
}

static int get_lane(loader_t *L, uint32_t pid, uint32_t tid)
{
    uint64_t key = (uint64_t)pid << 32 | tid;
    int i = u64map_get(&L->lane_map, key);
    if (i >= 0)
        return i;
    viz_trace_t *t = L->t;
    int proc = get_process(L, pid);
    if (proc < 0)
        return -1;
    if (grow((void **)&t->lanes, &L->cap_lanes, t->nlanes + 1, sizeof *t->lanes) ||
        u64map_put(&L->lane_map, key, (uint32_t)t->nlanes)) {
        L->oom = 1;
        return -1;
    }
    viz_lane_t *l = &t->lanes[t->nlanes];
    memset(l, 0, sizeof *l);
    l->pid = pid;
    l->tid = tid;
    l->process = proc;
    l->kind = (uint8_t)trc_track_kind_of_tid(tid, &l->n);
    if (tid / TRC_TIDS_PER_PID != pid)
        l->kind = TRC_TRACK_KIND_COUNT; /* not one of ours: the tid range says nothing */
    char name[32];
    snprintf(name, sizeof name, "thread %u", tid);
    l->name = intern(L, name);
    l->sort = (int32_t)(tid % TRC_TIDS_PER_PID);
    l->cat = lane_cat(t, l);
    return (int)t->nlanes++;
}

static viz_counter_kind_t counter_kind(const char *name)
{
    if (strcmp(name, "HBM bandwidth") == 0)
        return VIZ_CTR_HBM;
    if (strcmp(name, "SBUF in use") == 0)
        return VIZ_CTR_SBUF;
    if (strcmp(name, "PSUM in use") == 0)
        return VIZ_CTR_PSUM;
    if (strcmp(name, "DMA bandwidth") == 0)
        return VIZ_CTR_DMA_BW;
    if (strcmp(name, "DMA in flight") == 0)
        return VIZ_CTR_DMA_INFLIGHT;
    if (strncmp(name, "semaphore ", 10) == 0)
        return VIZ_CTR_SEMAPHORE;
    size_t n = strlen(name);
    if (strncmp(name, "link ", 5) == 0 && n > 10 && strcmp(name + n - 10, " bandwidth") == 0)
        return VIZ_CTR_LINK_BW;
    return VIZ_CTR_OTHER;
}

static void on_counter(loader_t *L, const trc_counter_t *c)
{
    viz_trace_t *t = L->t;
    uint32_t name = intern(L, c->name ? c->name : "counter");
    uint64_t key = (uint64_t)c->pid << 32 | name;
    int i = u64map_get(&L->counter_map, key);
    if (i < 0) {
        int proc = get_process(L, c->pid);
        if (proc < 0)
            return;
        if (grow((void **)&t->counters, &L->cap_counters, t->ncounters + 1,
                 sizeof *t->counters) ||
            u64map_put(&L->counter_map, key, (uint32_t)t->ncounters)) {
            L->oom = 1;
            return;
        }
        viz_counter_t *n = &t->counters[t->ncounters];
        memset(n, 0, sizeof *n);
        n->pid = c->pid;
        n->name = name;
        n->unit = intern(L, c->unit ? c->unit : "");
        n->process = proc;
        n->kind = (uint8_t)counter_kind(viz_str(t, name));
        i = (int)t->ncounters++;
    }
    viz_counter_t *n = &t->counters[i];
    if (grow((void **)&n->ts, &n->cap, n->n + 1, sizeof *n->ts)) {
        L->oom = 1;
        return;
    }
    size_t cap = n->cap;
    void *val = realloc(n->val, cap * sizeof *n->val);
    if (!val) {
        L->oom = 1;
        return;
    }
    n->val = val;
    double v = isfinite(c->value) ? c->value : 0.0; /* NaN or inf from a damaged file: 0 */
    n->ts[n->n] = c->ts_ps;
    n->val[n->n] = v;
    n->n++;
}

static void on_slice(loader_t *L, const trc_slice_t *s)
{
    int lane = get_lane(L, s->pid, s->tid);
    if (lane < 0)
        return;
    size_t i = L->t->nslices;
    if (i >= UINT32_MAX - 1) {
        L->oom = 1; /* more slices than the 32-bit indices hold */
        return;
    }
    if (i + 1 > L->cap_slices) {
        size_t cap = L->cap_slices ? L->cap_slices * 2 : 4096;
        uint64_t *st = realloc(L->start, cap * sizeof *st);
        if (st)
            L->start = st;
        uint64_t *en = realloc(L->end, cap * sizeof *en);
        if (en)
            L->end = en;
        uint32_t *la = realloc(L->lane, cap * sizeof *la);
        if (la)
            L->lane = la;
        viz_detail_t *de = realloc(L->detail, cap * sizeof *de);
        if (de)
            L->detail = de;
        if (!st || !en || !la || !de) {
            L->oom = 1;
            return;
        }
        L->cap_slices = cap;
    }
    uint64_t end = s->ts_ps + s->dur_ps;
    if (end < s->ts_ps)
        end = UINT64_MAX;
    L->start[i] = s->ts_ps;
    L->end[i] = end;
    L->lane[i] = (uint32_t)lane;
    viz_detail_t *d = &L->detail[i];
    memset(d, 0, sizeof *d);
    d->kind = s->kind;
    d->name = intern(L, s->name ? s->name : "");
    d->cause = VIZ_CAUSE_TRANSFER;
    switch (s->kind) {
    case TRC_SLICE_INSTR: {
        const trc_instr_args_t *a = &s->a.instr;
        d->index = a->index;
        d->line = (uint32_t)(a->line <= UINT32_MAX ? a->line : 0);
        d->operands = intern(L, a->operands);
        d->cost = intern(L, a->cost);
        d->aux_ps = a->latency;
        d->wait_ps = a->wait;
        d->bytes = a->bytes;
        d->flops = a->flops;
        d->stall = intern(L, a->stall);
        d->extra = intern(L, a->semaphore);
        d->cause = (uint8_t)(a->wait || (a->stall && *a->stall) ? viz_cause_of_stall(a->stall)
                                                                 : VIZ_CAUSE_NONE);
        if (d->cause == VIZ_CAUSE_OTHER && a->wait && (!a->stall || !*a->stall)) {
            /* waited without a named cause: pick the largest of the per-cause times */
            uint64_t m = a->wait_semaphore;
            d->cause = VIZ_CAUSE_SEMAPHORE;
            if (a->wait_port > m) {
                m = a->wait_port;
                d->cause = VIZ_CAUSE_PORT;
            }
            if (a->wait_interlock > m)
                d->cause = VIZ_CAUSE_INTERLOCK;
        }
        break;
    }
    case TRC_SLICE_DMA: {
        const trc_dma_args_t *a = &s->a.dma;
        d->index = a->index;
        d->line = (uint32_t)(a->line <= UINT32_MAX ? a->line : 0);
        d->operands = intern(L, a->operands);
        d->aux_ps = a->queued;
        d->cost = intern(L, a->cost);
        d->bytes = a->bytes;
        d->extra = intern(L, a->issuer);
        d->gbps = (float)a->gbps;
        break;
    }
    case TRC_SLICE_LINK: {
        const trc_link_args_t *a = &s->a.link;
        d->bytes = a->bytes;
        d->flops = (a->src_chip & 0xffffffffu) << 32 | (a->dst_chip & 0xffffffffu);
        d->gbps = (float)a->gbps;
        d->extra = intern(L, a->collective);
        break;
    }
    case TRC_SLICE_COLLECTIVE: {
        const trc_collective_args_t *a = &s->a.collective;
        d->index = a->index;
        d->line = (uint32_t)(a->line <= UINT32_MAX ? a->line : 0);
        d->operands = intern(L, a->operands);
        d->aux_ps = a->step;
        d->bytes = a->bytes;
        d->extra = intern(L, a->group);
        break;
    }
    default: break;
    }
    L->t->nslices++;
}

static void on_flow(loader_t *L, const trc_flow_t *f)
{
    int a = get_lane(L, f->from_pid, f->from_tid);
    int b = get_lane(L, f->to_pid, f->to_tid);
    if (a < 0 || b < 0)
        return;
    if (grow((void **)&L->flows, &L->cap_flows, L->nflows + 1, sizeof *L->flows)) {
        L->oom = 1;
        return;
    }
    raw_flow_t *r = &L->flows[L->nflows++];
    r->from_ts = f->from_ts_ps;
    r->to_ts = f->to_ts_ps;
    r->from_lane = a;
    r->to_lane = b;
    r->name = intern(L, f->name);
    const char *cat = f->cat ? f->cat : "";
    r->cat = strcmp(cat, "semaphore") == 0 ? VIZ_FLOW_SEMAPHORE
             : strcmp(cat, "dma") == 0     ? VIZ_FLOW_DMA
                                           : VIZ_FLOW_OTHER;
}

/* B of a pair: its pids after A's, its tids with them (tid = pid x 1000 + n). */
static uint32_t b_pid(uint32_t pid)
{
    return pid + VIZ_RUN_B_PID;
}

static uint32_t b_tid(uint32_t tid)
{
    return tid + VIZ_RUN_B_PID * TRC_TIDS_PER_PID;
}

static int on_record(void *ctx, const trc_record_t *r)
{
    loader_t *L = ctx;
    viz_trace_t *t = L->t;
    trc_record_t moved;
    if (L->run_b) {
        moved = *r;
        switch (r->kind) {
        case TRC_REC_RUN: return L->oom; /* A's describes the pair */
        case TRC_REC_PROCESS: {
            int p = get_process(L, b_pid(r->u.process.pid));
            if (p >= 0) {
                viz_process_t *pr = &t->procs[p];
                pr->name = intern(L, r->u.process.name ? r->u.process.name : "");
                pr->sort = r->u.process.sort_index;
                process_place(t, pr); /* from B's own name, then moved after A's chips */
                if (pr->chip >= 0)
                    pr->chip += VIZ_RUN_B_CHIP;
                pr->run = 1;
                char name[300];
                snprintf(name, sizeof name, "B \xc2\xb7 %s", viz_str(t, pr->name));
                pr->name = intern(L, name);
            }
            return L->oom;
        }
        case TRC_REC_TRACK:
            moved.u.track.pid = b_pid(r->u.track.pid);
            moved.u.track.tid = b_tid(r->u.track.tid);
            break;
        case TRC_REC_SLICE:
            moved.u.slice.pid = b_pid(r->u.slice.pid);
            moved.u.slice.tid = b_tid(r->u.slice.tid);
            break;
        case TRC_REC_COUNTER: moved.u.counter.pid = b_pid(r->u.counter.pid); break;
        case TRC_REC_FLOW:
            moved.u.flow.from_pid = b_pid(r->u.flow.from_pid);
            moved.u.flow.from_tid = b_tid(r->u.flow.from_tid);
            moved.u.flow.to_pid = b_pid(r->u.flow.to_pid);
            moved.u.flow.to_tid = b_tid(r->u.flow.to_tid);
            break;
        default: break;
        }
        r = &moved;
    }
    switch (r->kind) {
    case TRC_REC_RUN:
        t->program = intern(L, r->u.run.program);
        t->arch = intern(L, r->u.run.arch);
        t->chips = r->u.run.chips;
        t->cores = r->u.run.cores;
        t->timing_only = r->u.run.timing_only;
        break;
    case TRC_REC_PROCESS: {
        int p = get_process(L, r->u.process.pid);
        if (p >= 0) {
            t->procs[p].name = intern(L, r->u.process.name ? r->u.process.name : "");
            t->procs[p].sort = r->u.process.sort_index;
            process_place(t, &t->procs[p]);
        }
        break;
    }
    case TRC_REC_TRACK: {
        int l = get_lane(L, r->u.track.pid, r->u.track.tid);
        if (l >= 0) {
            viz_lane_t *lane = &t->lanes[l];
            if (r->u.track.name && *r->u.track.name)
                lane->name = intern(L, r->u.track.name);
            lane->sort = r->u.track.sort_index;
            lane->cat = lane_cat(t, lane);
        }
        break;
    }
    case TRC_REC_SLICE: on_slice(L, &r->u.slice); break;
    case TRC_REC_COUNTER: on_counter(L, &r->u.counter); break;
    case TRC_REC_FLOW: on_flow(L, &r->u.flow); break;
    default: break;
    }
    return L->oom;
}

/* ---- after reading: sort, resolve, summarise ------------------------------------------------- */

typedef struct sort_key {
    uint64_t start;
    uint32_t idx;
} sort_key_t;

static int cmp_key(const void *a, const void *b)
{
    const sort_key_t *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Group the slices by lane (stable counting sort), sort each lane by start where the file
 * did not already, and move the arrays into place. */
static int arrange_slices(loader_t *L)
{
    viz_trace_t *t = L->t;
    size_t n = t->nslices;
    size_t *pos = calloc(t->nlanes + 1, sizeof *pos);
    uint32_t *perm = malloc((n ? n : 1) * sizeof *perm);
    if (!pos || !perm) {
        free(pos);
        free(perm);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        pos[L->lane[i] + 1]++;
    for (size_t l = 0; l < t->nlanes; l++) {
        pos[l + 1] += pos[l];
        t->lanes[l].first = pos[l];
        t->lanes[l].count = 0;
    }
    for (size_t i = 0; i < n; i++) {
        viz_lane_t *l = &t->lanes[L->lane[i]];
        perm[l->first + l->count++] = (uint32_t)i;
    }
    free(pos);
    sort_key_t *keys = NULL;
    size_t cap_keys = 0;
    for (size_t li = 0; li < t->nlanes; li++) {
        viz_lane_t *l = &t->lanes[li];
        int sorted = 1;
        for (size_t k = 1; k < l->count && sorted; k++)
            sorted = L->start[perm[l->first + k - 1]] <= L->start[perm[l->first + k]];
        if (sorted)
            continue;
        if (grow((void **)&keys, &cap_keys, l->count, sizeof *keys)) {
            free(perm);
            return -1;
        }
        for (size_t k = 0; k < l->count; k++) {
            keys[k].idx = perm[l->first + k];
            keys[k].start = L->start[keys[k].idx];
        }
        qsort(keys, l->count, sizeof *keys, cmp_key);
        for (size_t k = 0; k < l->count; k++)
            perm[l->first + k] = keys[k].idx;
    }
    free(keys);
    size_t m = n ? n : 1;
    t->start = malloc(m * sizeof *t->start);
    t->end = malloc(m * sizeof *t->end);
    t->lane_of = malloc(m * sizeof *t->lane_of);
    t->detail = malloc(m * sizeof *t->detail);
    for (int k = 0; k < VIZ_COLOUR_MODE_COUNT; k++)
        t->cls[k] = malloc(m);
    if (!t->start || !t->end || !t->lane_of || !t->detail || !t->cls[0] || !t->cls[1]) {
        free(perm);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t s = perm[i];
        t->start[i] = L->start[s];
        t->end[i] = L->end[s];
        t->lane_of[i] = L->lane[s];
        t->detail[i] = L->detail[s];
    }
    free(perm);
    /* the old arrays are not needed any more: give their memory back before the rest */
    free(L->start);
    free(L->end);
    free(L->lane);
    free(L->detail);
    L->start = L->end = NULL;
    L->lane = NULL;
    L->detail = NULL;
    /* colour classes, and running maxima of ends for lanes whose slices overlap */
    for (size_t li = 0; li < t->nlanes; li++) {
        viz_lane_t *l = &t->lanes[li];
        int ends_sorted = 1;
        for (size_t k = 0; k < l->count; k++) {
            size_t i = l->first + k;
            const viz_detail_t *d = &t->detail[i];
            t->cls[VIZ_COLOUR_ENGINE][i] =
                (uint8_t)(l->cat * VIZ_SHADES + viz_name_shade(viz_str(t, d->name)));
            t->cls[VIZ_COLOUR_STALL][i] = (uint8_t)(VIZ_CLASS_CAUSE + d->cause);
            if (k && t->end[i] < t->end[i - 1])
                ends_sorted = 0;
        }
        if (!ends_sorted) {
            l->endmax = malloc(l->count * sizeof *l->endmax);
            if (!l->endmax)
                return -1;
            uint64_t mx = 0;
            for (size_t k = 0; k < l->count; k++) {
                if (t->end[l->first + k] > mx)
                    mx = t->end[l->first + k];
                l->endmax[k] = mx;
            }
        }
    }
    return 0;
}

size_t viz_lane_first_ending_after(const viz_trace_t *t, const viz_lane_t *l, double t_ps)
{
    const uint64_t *e = l->endmax ? l->endmax : t->end + l->first;
    size_t lo = 0, hi = l->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((double)e[mid] < t_ps)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The slice of `lane` a flow end at ts belongs to: the one starting at ts (or up to 1 ns
 * later: .pftrace flow instants carry whole nanoseconds), else the one containing ts. */
static long slice_at_flow_end(const viz_trace_t *t, int lane, uint64_t ts)
{
    const viz_lane_t *l = &t->lanes[lane];
    const uint64_t *st = t->start + l->first;
    size_t lo = 0, hi = l->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st[mid] < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < l->count && st[lo] - ts < 1000)
        return (long)(l->first + lo);
    if (lo > 0 && t->end[l->first + lo - 1] >= ts)
        return (long)(l->first + lo - 1);
    return -1;
}

static const viz_trace_t *flow_sort_trace;
static int flow_sort_out;

static int cmp_flow(const void *a, const void *b)
{
    const viz_flow_t *f = flow_sort_trace->flows;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t kx = flow_sort_out ? f[x].from : f[x].to, ky = flow_sort_out ? f[y].from : f[y].to;
    if (kx != ky)
        return kx < ky ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int resolve_flows(loader_t *L)
{
    viz_trace_t *t = L->t;
    t->flows = malloc((L->nflows ? L->nflows : 1) * sizeof *t->flows);
    if (!t->flows)
        return -1;
    for (size_t i = 0; i < L->nflows; i++) {
        const raw_flow_t *r = &L->flows[i];
        long a = slice_at_flow_end(t, r->from_lane, r->from_ts);
        long b = slice_at_flow_end(t, r->to_lane, r->to_ts);
        if (a < 0 || b < 0)
            continue;
        viz_flow_t *f = &t->flows[t->nflows++];
        f->from = (uint32_t)a;
        f->to = (uint32_t)b;
        f->name = r->name;
        f->cat = r->cat;
    }
    size_t m = t->nflows ? t->nflows : 1;
    t->flows_by_from = malloc(m * sizeof *t->flows_by_from);
    t->flows_by_to = malloc(m * sizeof *t->flows_by_to);
    if (!t->flows_by_from || !t->flows_by_to)
        return -1;
    for (size_t i = 0; i < t->nflows; i++)
        t->flows_by_from[i] = t->flows_by_to[i] = (uint32_t)i;
    flow_sort_trace = t;
    flow_sort_out = 1;
    qsort(t->flows_by_from, t->nflows, sizeof *t->flows_by_from, cmp_flow);
    flow_sort_out = 0;
    qsort(t->flows_by_to, t->nflows, sizeof *t->flows_by_to, cmp_flow);
    flow_sort_trace = NULL;
    return 0;
}

size_t viz_trace_flows_of(const viz_trace_t *t, uint32_t s, int out, size_t *first)
{
    const uint32_t *idx = out ? t->flows_by_from : t->flows_by_to;
    size_t lo = 0, hi = t->nflows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t k = out ? t->flows[idx[mid]].from : t->flows[idx[mid]].to;
        if (k < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < t->nflows && (out ? t->flows[idx[end]].from : t->flows[idx[end]].to) == s)
        end++;
    *first = lo;
    return end - lo;
}

static int cmp_sample(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Counters in time order (files write them in order; a foreign file may not) and their
 * maxima; the time range of the whole trace. */
static int finish_counters(viz_trace_t *t)
{
    for (size_t c = 0; c < t->ncounters; c++) {
        viz_counter_t *n = &t->counters[c];
        int sorted = 1;
        for (size_t i = 1; i < n->n && sorted; i++)
            sorted = n->ts[i - 1] <= n->ts[i];
        if (!sorted) {
            /* sort (ts, index) pairs, then apply */
            uint64_t *pairs = malloc(n->n * 2 * sizeof *pairs);
            double *val = malloc(n->n * sizeof *val);
            if (!pairs || !val) {
                free(pairs);
                free(val);
                return -1;
            }
            for (size_t i = 0; i < n->n; i++) {
                pairs[2 * i] = n->ts[i];
                pairs[2 * i + 1] = i;
            }
            qsort(pairs, n->n, 2 * sizeof *pairs, cmp_sample);
            for (size_t i = 0; i < n->n; i++) {
                val[i] = n->val[pairs[2 * i + 1]];
                n->ts[i] = pairs[2 * i];
            }
            free(n->val);
            n->val = val;
            free(pairs);
        }
        n->max = 0;
        for (size_t i = 0; i < n->n; i++)
            if (n->val[i] > n->max)
                n->max = n->val[i];
    }
    return 0;
}

static void time_range(viz_trace_t *t)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t l = 0; l < t->nlanes; l++) {
        const viz_lane_t *lane = &t->lanes[l];
        if (!lane->count)
            continue;
        if (t->start[lane->first] < lo)
            lo = t->start[lane->first];
        uint64_t e = lane->endmax ? lane->endmax[lane->count - 1]
                                  : t->end[lane->first + lane->count - 1];
        if (e > hi)
            hi = e;
    }
    for (size_t c = 0; c < t->ncounters; c++) {
        const viz_counter_t *n = &t->counters[c];
        if (!n->n)
            continue;
        if (n->ts[0] < lo)
            lo = n->ts[0];
        if (n->ts[n->n - 1] > hi)
            hi = n->ts[n->n - 1];
    }
    if (lo > hi) {
        lo = 0;
        hi = 1000;
    }
    if (hi == lo)
        hi = lo + 1000;
    t->t_min = lo;
    t->t_max = hi;
}

/* Busy fraction per engine kind in each of VIZ_OVERVIEW_BUCKETS buckets of the run. */
static int build_overview(viz_trace_t *t)
{
    t->bucket_ps = (double)(t->t_max - t->t_min) / VIZ_OVERVIEW_BUCKETS;
    for (int c = 0; c < VIZ_CAT_COUNT; c++) {
        t->overview[c] = calloc(VIZ_OVERVIEW_BUCKETS, sizeof *t->overview[c]);
        if (!t->overview[c])
            return -1;
    }
    double *acc = calloc(VIZ_OVERVIEW_BUCKETS, sizeof *acc);
    if (!acc)
        return -1;
    for (size_t li = 0; li < t->nlanes; li++) {
        const viz_lane_t *l = &t->lanes[li];
        if (!l->count)
            continue;
        t->cat_lanes[l->cat]++;
        memset(acc, 0, VIZ_OVERVIEW_BUCKETS * sizeof *acc);
        for (size_t k = 0; k < l->count; k++) {
            double a = (double)(t->start[l->first + k] - t->t_min);
            double b = (double)(t->end[l->first + k] - t->t_min);
            if (b <= a)
                continue;
            double fa = a / t->bucket_ps, fb = b / t->bucket_ps;
            size_t ia = (size_t)fa, ib = (size_t)fb;
            if (ia >= VIZ_OVERVIEW_BUCKETS)
                ia = VIZ_OVERVIEW_BUCKETS - 1;
            if (ib >= VIZ_OVERVIEW_BUCKETS)
                ib = VIZ_OVERVIEW_BUCKETS - 1;
            if (ia == ib) {
                acc[ia] += fb - fa;
                continue;
            }
            acc[ia] += (double)(ia + 1) - fa;
            for (size_t j = ia + 1; j < ib; j++)
                acc[j] += 1.0;
            acc[ib] += fb - (double)ib;
        }
        for (size_t j = 0; j < VIZ_OVERVIEW_BUCKETS; j++)
            t->overview[l->cat][j] += (float)(acc[j] > 1.0 ? 1.0 : acc[j]);
    }
    free(acc);
    for (int c = 0; c < VIZ_CAT_COUNT; c++)
        if (t->cat_lanes[c])
            for (size_t j = 0; j < VIZ_OVERVIEW_BUCKETS; j++)
                t->overview[c][j] /= (float)t->cat_lanes[c];
    return 0;
}

static void loader_free(loader_t *L)
{
    u64map_free(&L->lane_map);
    u64map_free(&L->proc_map);
    u64map_free(&L->counter_map);
    free(L->start);
    free(L->end);
    free(L->lane);
    free(L->detail);
    free(L->flows);
}

static ncsim_status_t load_runs(const char *path, const char *path_b, viz_trace_t **out,
                                char *err, size_t errlen);

ncsim_status_t viz_trace_load(const char *path, viz_trace_t **out, char *err, size_t errlen)
{
    return load_runs(path, NULL, out, err, errlen);
}

ncsim_status_t viz_trace_load_pair(const char *path_a, const char *path_b, viz_trace_t **out,
                                   char *err, size_t errlen)
{
    return load_runs(path_a, path_b, out, err, errlen);
}

int viz_trace_runs(const viz_trace_t *t)
{
    return t->runs;
}

static ncsim_status_t load_runs(const char *path, const char *path_b, viz_trace_t **out,
                                char *err, size_t errlen)
{
    *out = NULL;
    viz_trace_t *t = calloc(1, sizeof *t);
    if (!t || strings_init(&t->str)) {
        if (t)
            strings_free(&t->str);
        free(t);
        snprintf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    snprintf(t->path, sizeof t->path, "%s", path);
    snprintf(t->path_b, sizeof t->path_b, "%s", path_b ? path_b : "");
    t->runs = path_b ? 2 : 1;
    loader_t L;
    memset(&L, 0, sizeof L);
    L.t = t;
    ncsim_status_t st = trc_read(path, on_record, &L, err, errlen);
    if (st == NCSIM_OK && path_b && !L.oom) {
        /* A's processes are named "A · ..." once B's arrive */
        for (size_t p = 0; p < t->nprocs && !L.oom; p++) {
            char name[300];
            snprintf(name, sizeof name, "A \xc2\xb7 %s", viz_str(t, t->procs[p].name));
            t->procs[p].name = intern(&L, name);
        }
        L.run_b = 1;
        st = trc_read(path_b, on_record, &L, err, errlen);
    }
    if (st == NCSIM_OK && L.oom) {
        snprintf(err, errlen, "%s: out of memory while loading the trace", path);
        st = NCSIM_NOMEM;
    }
    if (st == NCSIM_OK && t->nlanes == 0 && t->ncounters == 0) {
        snprintf(err, errlen, "%s: the trace holds no tracks, slices or counters", path);
        st = NCSIM_FORMAT;
    }
    if (st == NCSIM_OK && (arrange_slices(&L) || resolve_flows(&L) || finish_counters(t))) {
        snprintf(err, errlen, "%s: out of memory while loading the trace", path);
        st = NCSIM_NOMEM;
    }
    if (st == NCSIM_OK) {
        time_range(t);
        if (build_overview(t)) {
            snprintf(err, errlen, "%s: out of memory while loading the trace", path);
            st = NCSIM_NOMEM;
        }
    }
    loader_free(&L);
    if (st != NCSIM_OK) {
        viz_trace_free(t);
        return st;
    }
    *out = t;
    return NCSIM_OK;
}

void viz_trace_free(viz_trace_t *t)
{
    if (!t)
        return;
    strings_free(&t->str);
    for (size_t l = 0; l < t->nlanes; l++)
        free(t->lanes[l].endmax);
    free(t->lanes);
    free(t->procs);
    free(t->start);
    free(t->end);
    free(t->lane_of);
    free(t->detail);
    for (int k = 0; k < VIZ_COLOUR_MODE_COUNT; k++)
        free(t->cls[k]);
    for (size_t c = 0; c < t->ncounters; c++) {
        free(t->counters[c].ts);
        free(t->counters[c].val);
    }
    free(t->counters);
    free(t->flows);
    free(t->flows_by_from);
    free(t->flows_by_to);
    for (int c = 0; c < VIZ_CAT_COUNT; c++)
        free(t->overview[c]);
    free(t);
}

size_t viz_trace_slice_count(const viz_trace_t *t)
{
    return t->nslices;
}
size_t viz_trace_lane_count(const viz_trace_t *t)
{
    return t->nlanes;
}
size_t viz_trace_counter_count(const viz_trace_t *t)
{
    return t->ncounters;
}
size_t viz_trace_flow_count(const viz_trace_t *t)
{
    return t->nflows;
}
uint64_t viz_trace_start_ps(const viz_trace_t *t)
{
    return t->t_min;
}
uint64_t viz_trace_end_ps(const viz_trace_t *t)
{
    return t->t_max;
}

void viz_slice_info(const viz_trace_t *t, size_t s, viz_slice_info_t *info)
{
    const viz_detail_t *d = &t->detail[s];
    const viz_lane_t *l = &t->lanes[t->lane_of[s]];
    info->lane = (int)t->lane_of[s];
    info->slice = s - l->first;
    info->start_ps = t->start[s];
    info->dur_ps = t->end[s] - t->start[s];
    info->name = viz_str(t, d->name);
    info->operands = viz_str(t, d->operands);
    info->line = d->line;
    info->index = d->index;
    info->stall = d->kind == TRC_SLICE_INSTR ? viz_str(t, d->stall) : "";
    info->wait_ps = d->wait_ps;
    info->cost = viz_str(t, d->cost);
}

double viz_flow_source_time(const viz_trace_t *t, uint32_t s)
{
    const viz_detail_t *d = &t->detail[s];
    if (d->kind == TRC_SLICE_INSTR && d->aux_ps)
        return (double)t->start[s] + (double)d->aux_ps;
    return (double)t->end[s];
}
