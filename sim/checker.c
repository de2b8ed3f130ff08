/*
 * checker.c -- races, uninitialised reads, NaN producers, PSUM accumulation misuse and
 * semaphore misuse (checker.h; what each check means is in docs/check.md).
 *
 * Happens-before. Every accessor has a vector clock (VC) over all accessors: per core the six
 * engines (cc also performs the collectives' HBM accesses, since it is parked in a
 * collective until it completes) and the 16 DMA queues. An instruction ticks its engine's own
 * entry when it starts, after joining what its waits need; its accesses carry that epoch.
 *   - Program order: an engine's instructions, and a queue's transfers (FIFO), are ordered.
 *   - DMA: a transfer joins the VC of the `dma` instruction that issued it (snapshot taken at
 *     the issue) and ticks its queue; its posts publish the queue's VC at landing.
 *   - Posts publish the VC of the posting instruction as it was when it started (a snapshot:
 *     the engine may have started later instructions by the time it completes).
 *   - Waits, with counting semantics. The posts to a semaphore are applied in one order (the
 *     simulator's); each semaphore keeps the running join of the VCs of its posts in that
 *     order. A wait that holds is ordered after the posts up to the one that last made its
 *     condition true: for `>= N` the last post that took the value from below N to N or more,
 *     for `== N` the last post that made the value N. With increments only, that is the
 *     minimal prefix of posts whose sum reaches N. After `-=` (a consumer giving a credit
 *     back), a later `>= N` needs the post that brought the value back up, not the first one
 *     that ever reached N. A wait that held from the initial value is ordered after nothing.
 *     Only crossings some wait of the program can need are stored (their values are known
 *     statically), so memory grows with the waits, not with the posts.
 *   - Collectives: a barrier; each member's cc joins the VCs of every member's cc at
 *     arrival, and the collective's HBM accesses (each member reads its SRC and writes its
 *     D) carry the arrival epochs, so they are ordered with each other.
 * Shadow memory. Per SBUF/PSUM partition and per 64 KiB chunk of HBM, a sorted array of byte
 * segments that covers it; each segment has its last write and the reads since, as epochs
 * (FastTrack): a read that happens after an earlier read of the same accessor or of an
 * ordered one replaces it; concurrent reads accumulate. Accesses are applied as byte ranges
 * (a view's contiguous runs), splitting segments at their ends and merging equal neighbours
 * afterwards, so a tile accessed whole stays one segment per partition.
 */
#include "checker.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dis.h"
#include "sim_internal.h"

#define NQUEUES 16
#define NACC (ISA_ENGINE_COUNT + NQUEUES) /* accessors per core: engines, then queues */
#define ACC_NONE 0xffffu                  /* never written */
#define ACC_INIT 0xfffeu                  /* bound before the run (HBM inputs) */
#define NO_INSTR UINT32_MAX
#define HBM_CHUNK_BITS 16
#define HBM_CHUNK (1u << HBM_CHUNK_BITS)
#define HBM_LEAF_BITS 10
#define MAX_KEPT 10000

enum { AM_R = 1, AM_W = 2, AM_RW = 3 };

typedef struct ep {
    uint32_t clock;
    uint32_t instr; /* global index in prog->instrs */
    uint16_t acc;
    uint16_t pad;
} ep_t;

typedef struct seg {
    uint32_t lo;      /* first byte; the segment ends where the next begins */
    uint16_t nr;      /* reads since the last write */
    uint16_t rcap;    /* 0: reads inline (at most 2), else capacity of r.ext */
    ep_t w;
    union {
        ep_t in[2];
        ep_t *ext;
    } r;
} seg_t;

typedef struct line {
    seg_t *s;
    uint32_t n, cap; /* n == 0: not touched yet (one never-written segment) */
} line_t;

typedef struct crossing {
    int64_t before, after;
    uint32_t *vc; /* join of every post up to this one */
} crossing_t;

typedef struct semst {
    int64_t value;
    int monotone;   /* no post has lowered it so far */
    uint32_t *cum;  /* join of the VCs of every post so far */
    crossing_t *x;
    uint32_t nx, capx;
    int64_t *ge, *eq; /* the values waits of the program need (sorted, unique) */
    uint32_t nge, neq;
} semst_t;

typedef struct snap {
    uint32_t index;
    uint32_t *vc;
} snap_t;

typedef struct snapq {
    snap_t *a;
    uint32_t head, n, cap;
} snapq_t;

typedef struct range {
    uint64_t lo, hi;
} range_t;

/* Identity of a finding: the same pair of instructions is one finding. */
typedef struct fkey {
    uint8_t kind, race, space, sem;
    uint32_t unit;
    uint32_t acc1, acc2;
    uint32_t instr1, instr2;
} fkey_t;

struct chk {
    const isa_program_t *prog;
    const mdl_arch_t *arch;
    unsigned checks;
    sim_observer_t obs;
    uint32_t ncores, nchips, na;
    uint32_t *vcs;          /* na x na */
    uint32_t *instr_core;   /* per instruction */
    uint32_t *next_acc;     /* per pe instruction writing PSUM: the next pe write of
                             * overlapping bytes when it is a `matmul ..., acc`, else NO_INSTR */
    uint8_t slot_mode[ISA_OP_COUNT][ISA_MAX_SLOTS];
    int matmul_acc_slot, dma_acc_slot, dma_queue_slot;
    uint32_t sbuf_parts, psum_parts;
    uint32_t sbuf_bytes, psum_bytes;
    line_t *sbuf, *psum;    /* ncores x partitions */
    line_t ***hbm;          /* nchips x leaves x (1 << HBM_LEAF_BITS) */
    uint64_t hbm_leaves;
    semst_t *sems;          /* ncores x ISA_MAX_SEMS */
    snapq_t *postq;         /* ncores x ISA_ENGINE_COUNT */
    snapq_t *dmaq;          /* ncores x NQUEUES */
    uint8_t *last_landed;   /* per core: queue of the transfer that landed last */
    uint32_t *barrier;
    uint32_t *self_done; /* per accessor: its own latest epoch known complete (from waits) */
    uint32_t *tmpvc;
    int barrier_open;
    uint32_t **pool;        /* free VC buffers */
    uint32_t npool, cappool;
    range_t *rng;
    size_t nrng, caprng;
    float *fbuf;
    size_t fcap;
    chk_finding_t *f;
    fkey_t *keys;
    size_t nf, capf;
    uint32_t *tab;          /* open addressing: finding index + 1 */
    size_t tabcap;
    uint64_t dropped;
    int nan_found;
    int failed;
};

/* ---- small helpers ---------------------------------------------------------------------------- */

static inline uint32_t *vc_of(chk_t *k, uint32_t acc)
{
    return &k->vcs[(size_t)acc * k->na];
}

static inline uint32_t acc_engine(uint32_t core, unsigned engine)
{
    return core * NACC + engine;
}

static inline uint32_t acc_queue(uint32_t core, unsigned queue)
{
    return core * NACC + ISA_ENGINE_COUNT + queue;
}

static void vc_join(uint32_t *dst, const uint32_t *src, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (src[i] > dst[i])
            dst[i] = src[i];
}

static uint32_t *vc_alloc(chk_t *k)
{
    if (k->npool)
        return k->pool[--k->npool];
    uint32_t *v = malloc((size_t)k->na * sizeof *v);
    if (!v)
        k->failed = 1;
    return v;
}

static void vc_release(chk_t *k, uint32_t *v)
{
    if (!v)
        return;
    if (k->npool == k->cappool) {
        uint32_t nc = k->cappool ? k->cappool * 2 : 64;
        uint32_t **p = realloc(k->pool, nc * sizeof *p);
        if (!p) {
            free(v);
            return;
        }
        k->pool = p;
        k->cappool = nc;
    }
    k->pool[k->npool++] = v;
}

static uint32_t *vc_copy(chk_t *k, const uint32_t *src)
{
    uint32_t *v = vc_alloc(k);
    if (v)
        memcpy(v, src, (size_t)k->na * sizeof *v);
    return v;
}

/* happens-before: epoch e is known to the accessor with clock vc */
static inline int hb(const ep_t *e, uint32_t acc, const uint32_t *vc)
{
    return e->acc == ACC_INIT || e->acc == acc || e->clock <= vc[e->acc];
}

static int snapq_push(chk_t *k, snapq_t *q, uint32_t index, const uint32_t *vc)
{
    if (q->n == q->cap) {
        uint32_t nc = q->cap ? q->cap * 2 : 8;
        snap_t *a = malloc(nc * sizeof *a);
        if (!a) {
            k->failed = 1;
            return -1;
        }
        for (uint32_t i = 0; i < q->n; i++)
            a[i] = q->a[(q->head + i) % q->cap];
        free(q->a);
        q->a = a;
        q->cap = nc;
        q->head = 0;
    }
    uint32_t *c = vc_copy(k, vc);
    if (!c)
        return -1;
    q->a[(q->head + q->n) % q->cap] = (snap_t){index, c};
    q->n++;
    return 0;
}

/* Remove and return the snapshot of `index` (the front one when index is NO_INSTR). */
static uint32_t *snapq_take(snapq_t *q, uint32_t index)
{
    for (uint32_t i = 0; i < q->n; i++) {
        snap_t *s = &q->a[(q->head + i) % q->cap];
        if (index != NO_INSTR && s->index != index)
            continue;
        uint32_t *vc = s->vc;
        /* close the gap by moving the earlier entries one step back */
        for (uint32_t j = i; j > 0; j--)
            q->a[(q->head + j) % q->cap] = q->a[(q->head + j - 1) % q->cap];
        q->head = (q->head + 1) % q->cap;
        q->n--;
        return vc;
    }
    return NULL;
}

static snap_t *snapq_find(snapq_t *q, uint32_t index)
{
    for (uint32_t i = 0; i < q->n; i++) {
        snap_t *s = &q->a[(q->head + i) % q->cap];
        if (s->index == index)
            return s;
    }
    return NULL;
}

/* ---- findings ---------------------------------------------------------------------------------- */

static uint64_t fkey_hash(const fkey_t *key)
{
    const unsigned char *b = (const unsigned char *)key;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof *key; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static chk_site_t make_site(const chk_t *k, uint32_t acc, uint32_t instr, int write)
{
    chk_site_t s;
    memset(&s, 0, sizeof s);
    s.queue = -1;
    if (acc >= ACC_INIT || instr == NO_INSTR || instr >= k->prog->ninstrs)
        return s;
    const isa_instr_t *in = &k->prog->instrs[instr];
    s.valid = 1;
    s.core = acc / NACC;
    unsigned local = acc % NACC;
    s.engine = in->engine;
    if (local >= ISA_ENGINE_COUNT)
        s.queue = (int8_t)(local - ISA_ENGINE_COUNT);
    s.instr = in;
    uint32_t core = k->instr_core[instr];
    s.index = instr - isa_stream(k->prog, core, (isa_engine_t)in->engine)->first;
    s.write = (uint8_t)(write != 0);
    return s;
}

static int tab_grow(chk_t *k)
{
    size_t nc = k->tabcap ? k->tabcap * 2 : 256;
    uint32_t *t = calloc(nc, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < k->nf; i++) {
        size_t h = (size_t)fkey_hash(&k->keys[i]) & (nc - 1);
        while (t[h])
            h = (h + 1) & (nc - 1);
        t[h] = (uint32_t)(i + 1);
    }
    free(k->tab);
    k->tab = t;
    k->tabcap = nc;
    return 0;
}

/* The finding with this key, created when new (NULL when over the limit or out of memory). */
static chk_finding_t *finding_get(chk_t *k, const fkey_t *key, int *created)
{
    *created = 0;
    if (!k->tabcap && tab_grow(k)) {
        k->failed = 1;
        return NULL;
    }
    size_t h = (size_t)fkey_hash(key) & (k->tabcap - 1);
    while (k->tab[h]) {
        size_t i = k->tab[h] - 1;
        if (memcmp(&k->keys[i], key, sizeof *key) == 0)
            return &k->f[i];
        h = (h + 1) & (k->tabcap - 1);
    }
    if (k->nf >= MAX_KEPT) {
        k->dropped++;
        return NULL;
    }
    if (k->nf == k->capf) {
        size_t nc = k->capf ? k->capf * 2 : 64;
        chk_finding_t *f = realloc(k->f, nc * sizeof *f);
        if (!f) {
            k->failed = 1;
            return NULL;
        }
        k->f = f;
        fkey_t *kk = realloc(k->keys, nc * sizeof *kk);
        if (!kk) {
            k->failed = 1;
            return NULL;
        }
        k->keys = kk;
        k->capf = nc;
    }
    k->keys[k->nf] = *key;
    chk_finding_t *f = &k->f[k->nf];
    memset(f, 0, sizeof *f);
    k->tab[h] = (uint32_t)(k->nf + 1);
    k->nf++;
    if (k->nf * 2 > k->tabcap && tab_grow(k))
        k->failed = 1;
    *created = 1;
    return &k->f[k->nf - 1];
}

/* The access being applied to shadow memory. */
typedef struct op {
    uint32_t acc;
    uint32_t clock, instr;
    const uint32_t *vc;
    uint32_t core;          /* issuing core */
    uint8_t space;
    uint32_t unit;          /* core or chip */
    uint32_t part;          /* partition (SBUF/PSUM) */
    uint64_t base;          /* HBM: address of the line */
    uint8_t read, write;
    uint8_t races, uninit, psum_acc, psum_open, track_reads;
    uint32_t pe_acc;        /* the pe of the issuing core */
    /* the last finding noted by this access, to skip the hash for repeats (an index:
     * the array may move) */
    fkey_t last_key;
    size_t last;
} op_t;

#define NO_LAST SIZE_MAX

static void note(chk_t *k, op_t *op, chk_kind_t kind, chk_race_t race, const ep_t *first,
                 int first_write, uint64_t lo, uint64_t hi)
{
    fkey_t key;
    memset(&key, 0, sizeof key);
    key.kind = (uint8_t)kind;
    key.race = (uint8_t)race;
    key.space = op->space;
    key.unit = op->unit;
    key.acc1 = first ? first->acc : ACC_NONE;
    key.instr1 = first ? first->instr : NO_INSTR;
    key.acc2 = op->acc;
    key.instr2 = op->instr;
    chk_finding_t *f;
    if (op->last != NO_LAST && memcmp(&op->last_key, &key, sizeof key) == 0) {
        f = &k->f[op->last];
    } else {
        int created;
        f = finding_get(k, &key, &created);
        if (!f)
            return;
        if (created) {
            f->kind = kind;
            f->race = race;
            f->has_range = 1;
            f->space = op->space;
            f->unit = op->unit;
            f->p0 = UINT32_MAX;
            f->lo = UINT64_MAX;
            if (first)
                f->first = make_site(k, first->acc, first->instr, first_write);
            f->second = make_site(k, op->acc, op->instr, op->write);
        }
        op->last_key = key;
        op->last = (size_t)(f - k->f);
    }
    uint32_t p0 = op->space == ISA_SPACE_HBM ? 0 : op->part;
    uint32_t p1 = op->space == ISA_SPACE_HBM ? 1 : op->part + 1;
    if (p0 < f->p0)
        f->p0 = p0;
    if (p1 > f->p1)
        f->p1 = p1;
    if (op->base + lo < f->lo)
        f->lo = op->base + lo;
    if (op->base + hi > f->hi)
        f->hi = op->base + hi;
    f->count = 1;
}

/* ---- shadow memory ------------------------------------------------------------------------------- */

static inline ep_t *seg_reads(seg_t *s)
{
    return s->rcap ? s->r.ext : s->r.in;
}

static void seg_clear_reads(seg_t *s)
{
    if (s->rcap)
        free(s->r.ext);
    s->rcap = 0;
    s->nr = 0;
}

static int ep_eq(const ep_t *a, const ep_t *b)
{
    return a->acc == b->acc && a->clock == b->clock && a->instr == b->instr;
}

static int seg_same(seg_t *a, seg_t *b)
{
    if (!ep_eq(&a->w, &b->w) || a->nr != b->nr)
        return 0;
    const ep_t *ra = seg_reads(a), *rb = seg_reads(b);
    for (uint32_t i = 0; i < a->nr; i++)
        if (!ep_eq(&ra[i], &rb[i]))
            return 0;
    return 1;
}

static int line_init(line_t *L)
{
    L->s = malloc(4 * sizeof *L->s);
    if (!L->s)
        return -1;
    L->cap = 4;
    L->n = 1;
    memset(&L->s[0], 0, sizeof L->s[0]);
    L->s[0].w.acc = ACC_NONE;
    L->s[0].w.instr = NO_INSTR;
    return 0;
}

static void line_free(line_t *L)
{
    for (uint32_t i = 0; i < L->n; i++)
        seg_clear_reads(&L->s[i]);
    free(L->s);
    L->s = NULL;
    L->n = L->cap = 0;
}

/* Split segment i at `at` (inside it): a copy starts at `at`. */
static int seg_split(line_t *L, uint32_t i, uint32_t at)
{
    if (L->n == L->cap) {
        uint32_t nc = L->cap * 2;
        seg_t *s = realloc(L->s, nc * sizeof *s);
        if (!s)
            return -1;
        L->s = s;
        L->cap = nc;
    }
    memmove(&L->s[i + 2], &L->s[i + 1], (L->n - i - 1) * sizeof *L->s);
    L->s[i + 1] = L->s[i];
    L->s[i + 1].lo = at;
    if (L->s[i].rcap) {
        ep_t *e = malloc(L->s[i].rcap * sizeof *e);
        if (!e) {
            /* keep the line consistent: drop the copy's reads */
            L->s[i + 1].rcap = 0;
            L->s[i + 1].nr = 0;
            L->n++;
            return -1;
        }
        memcpy(e, L->s[i].r.ext, L->s[i].nr * sizeof *e);
        L->s[i + 1].r.ext = e;
    }
    L->n++;
    return 0;
}

static uint32_t seg_find(const line_t *L, uint32_t off)
{
    uint32_t lo = 0, hi = L->n; /* last segment with s.lo <= off */
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (L->s[mid].lo <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void read_add(chk_t *k, op_t *op, seg_t *s)
{
    ep_t cur = {op->clock, op->instr, (uint16_t)op->acc, 0};
    ep_t *r = seg_reads(s);
    uint32_t keep = 0;
    for (uint32_t i = 0; i < s->nr; i++)
        if (!hb(&r[i], op->acc, op->vc))
            r[keep++] = r[i];
    s->nr = (uint16_t)keep;
    uint32_t cap = s->rcap ? s->rcap : 2;
    if (s->nr == cap) {
        if (cap >= 0x8000)
            return; /* absurdly many concurrent readers: keep the ones we have */
        uint32_t nc = cap * 2;
        ep_t *e = malloc(nc * sizeof *e);
        if (!e) {
            k->failed = 1;
            return;
        }
        memcpy(e, r, s->nr * sizeof *e);
        if (s->rcap)
            free(s->r.ext);
        s->r.ext = e;
        s->rcap = (uint16_t)nc;
        r = e;
    }
    r[s->nr++] = cur;
}

static void seg_apply(chk_t *k, op_t *op, seg_t *s, uint32_t lo, uint32_t hi)
{
    ep_t *w = &s->w;
    if (op->read) {
        if (w->acc == ACC_NONE) {
            if (op->psum_acc)
                note(k, op, CHK_KIND_PSUM_ACC, CHK_RACE_NONE, NULL, 0, lo, hi);
            else if (op->uninit)
                note(k, op, CHK_KIND_UNINIT, CHK_RACE_NONE, NULL, 0, lo, hi);
        } else if (w->acc != ACC_INIT) {
            if (op->races && !hb(w, op->acc, op->vc))
                note(k, op, CHK_KIND_RACE, CHK_RACE_RAW, w, 1, lo, hi);
            if (op->psum_acc && w->acc != op->pe_acc)
                note(k, op, CHK_KIND_PSUM_ACC, CHK_RACE_NONE, w, 1, lo, hi);
            if (op->psum_open && w->acc == op->pe_acc && w->instr < k->prog->ninstrs &&
                k->next_acc[w->instr] != NO_INSTR) {
                /* the next pe write of these bytes accumulates into them */
                const isa_instr_t *nx = &k->prog->instrs[k->next_acc[w->instr]];
                const isa_view_t *d = &k->prog->views[isa_instr_args(k->prog, nx)[0].index];
                int64_t dlo, dhi;
                isa_view_byte_range(d, &dlo, &dhi);
                if (op->part >= d->pstart && op->part < (uint32_t)d->pstart + d->pcount &&
                    (int64_t)lo < dhi && dlo < (int64_t)hi)
                    note(k, op, CHK_KIND_PSUM_OPEN, CHK_RACE_NONE, w, 1, lo, hi);
            }
        }
        if (op->track_reads)
            read_add(k, op, s);
    }
    if (op->write) {
        if (op->races) {
            if (w->acc < ACC_INIT && !hb(w, op->acc, op->vc))
                note(k, op, CHK_KIND_RACE, CHK_RACE_WAW, w, 1, lo, hi);
            ep_t *r = seg_reads(s);
            for (uint32_t i = 0; i < s->nr; i++)
                if (!hb(&r[i], op->acc, op->vc))
                    note(k, op, CHK_KIND_RACE, CHK_RACE_WAR, &r[i], 0, lo, hi);
        }
        seg_clear_reads(s);
        w->acc = (uint16_t)op->acc;
        w->clock = op->clock;
        w->instr = op->instr;
    }
}

/* Apply op to bytes [lo, hi) of a line of `size` bytes. */
static void line_access(chk_t *k, op_t *op, line_t *L, uint32_t size, uint32_t lo, uint32_t hi)
{
    if (hi > size)
        hi = size;
    if (lo >= hi)
        return;
    if (!L->n && line_init(L)) {
        k->failed = 1;
        return;
    }
    uint32_t i = seg_find(L, lo);
    if (L->s[i].lo < lo) {
        if (seg_split(L, i, lo)) {
            k->failed = 1;
            return;
        }
        i++;
    }
    uint32_t first = i;
    while (i < L->n && L->s[i].lo < hi) {
        uint32_t end = i + 1 < L->n ? L->s[i + 1].lo : size;
        if (end > hi) {
            if (seg_split(L, i, hi)) {
                k->failed = 1;
                return;
            }
            end = hi;
        }
        seg_apply(k, op, &L->s[i], L->s[i].lo, end);
        i++;
    }
    /* merge equal neighbours in [first - 1, i] */
    uint32_t a = first ? first - 1 : 0;
    uint32_t b = i < L->n ? i : L->n - 1;
    uint32_t out = a;
    for (uint32_t j = a + 1; j <= b; j++) {
        if (seg_same(&L->s[out], &L->s[j])) {
            seg_clear_reads(&L->s[j]);
            continue;
        }
        L->s[++out] = L->s[j];
    }
    uint32_t removed = b - out;
    if (removed) {
        memmove(&L->s[out + 1], &L->s[b + 1], (L->n - b - 1) * sizeof *L->s);
        L->n -= removed;
    }
}

static line_t *hbm_line(chk_t *k, uint32_t chip, uint64_t chunk)
{
    uint64_t leaf = chunk >> HBM_LEAF_BITS;
    if (leaf >= k->hbm_leaves)
        return NULL;
    line_t **leaves = k->hbm[chip];
    if (!leaves[leaf]) {
        leaves[leaf] = calloc((size_t)1 << HBM_LEAF_BITS, sizeof(line_t));
        if (!leaves[leaf]) {
            k->failed = 1;
            return NULL;
        }
    }
    return &leaves[leaf][chunk & ((1u << HBM_LEAF_BITS) - 1)];
}

static int range_cmp(const void *a, const void *b)
{
    const range_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int range_push(chk_t *k, uint64_t lo, uint64_t hi)
{
    if (k->nrng && k->rng[k->nrng - 1].hi == lo) {
        k->rng[k->nrng - 1].hi = hi; /* the common case: consecutive runs */
        return 0;
    }
    if (k->nrng == k->caprng) {
        size_t nc = k->caprng ? k->caprng * 2 : 256;
        range_t *r = realloc(k->rng, nc * sizeof *r);
        if (!r)
            return -1;
        k->rng = r;
        k->caprng = nc;
    }
    k->rng[k->nrng++] = (range_t){lo, hi};
    return 0;
}

/*
 * The byte ranges a view touches: inside each partition (SBUF/PSUM: the free dims) or in
 * HBM, sorted and merged. Contiguous dims are merged first, so a dense tile is one range.
 */
static int view_ranges(chk_t *k, const isa_view_t *v)
{
    k->nrng = 0;
    int64_t es = (int64_t)isa_dtype_size((isa_dtype_t)v->dtype);
    int64_t bst[ISA_MAX_DIMS];
    uint64_t cnt[ISA_MAX_DIMS];
    unsigned nd = 0;
    for (unsigned i = 0; i < v->ndims; i++) {
        if (v->count[i] <= 1)
            continue;
        int64_t b = v->stride[i] * es;
        if (nd && bst[nd - 1] == b * (int64_t)v->count[i]) {
            cnt[nd - 1] *= v->count[i];
            bst[nd - 1] = b;
            continue;
        }
        cnt[nd] = v->count[i];
        bst[nd++] = b;
    }
    /* the innermost dim becomes one range when dense (or a broadcast) */
    int inner_dense = nd && (bst[nd - 1] == es || bst[nd - 1] == -es || bst[nd - 1] == 0);
    unsigned outer = inner_dense ? nd - 1 : nd;
    uint64_t idx[ISA_MAX_DIMS] = {0};
    int sorted = 1;
    uint64_t prev = 0;
    for (;;) {
        int64_t addr = (int64_t)v->offset;
        for (unsigned d = 0; d < outer; d++)
            addr += (int64_t)idx[d] * bst[d];
        int64_t lo = addr, hi = addr + es;
        if (inner_dense) {
            int64_t span = (int64_t)(cnt[nd - 1] - 1) * bst[nd - 1];
            if (span < 0)
                lo = addr + span;
            else
                hi = addr + span + es;
        }
        if (lo < 0)
            lo = 0;
        if ((uint64_t)lo < prev)
            sorted = 0;
        prev = (uint64_t)lo;
        if (hi > lo && range_push(k, (uint64_t)lo, (uint64_t)hi))
            return -1;
        int carry = 1;
        for (unsigned d = outer; d-- > 0;) {
            if (++idx[d] < cnt[d]) {
                carry = 0;
                break;
            }
            idx[d] = 0;
        }
        if (carry)
            break;
    }
    if (!sorted && k->nrng > 1) {
        qsort(k->rng, k->nrng, sizeof *k->rng, range_cmp);
        size_t out = 0;
        for (size_t i = 1; i < k->nrng; i++) {
            if (k->rng[i].lo <= k->rng[out].hi) {
                if (k->rng[i].hi > k->rng[out].hi)
                    k->rng[out].hi = k->rng[i].hi;
            } else {
                k->rng[++out] = k->rng[i];
            }
        }
        k->nrng = out + 1;
    }
    return 0;
}

/* Apply op to every byte of view v as seen from op->core. */
static void access_view(chk_t *k, op_t *op, const isa_view_t *v)
{
    if (view_ranges(k, v)) {
        k->failed = 1;
        return;
    }
    op->space = v->space;
    op->last = NO_LAST;
    if (v->space == ISA_SPACE_HBM) {
        uint32_t chip = op->core / ISA_CORES_PER_CHIP;
        op->unit = chip;
        op->part = 0;
        for (size_t r = 0; r < k->nrng; r++) {
            uint64_t lo = k->rng[r].lo, hi = k->rng[r].hi;
            while (lo < hi) {
                uint64_t chunk = lo >> HBM_CHUNK_BITS;
                uint64_t base = chunk << HBM_CHUNK_BITS;
                uint64_t end = base + HBM_CHUNK < hi ? base + HBM_CHUNK : hi;
                line_t *L = hbm_line(k, chip, chunk);
                if (!L)
                    return;
                op->base = base;
                line_access(k, op, L, HBM_CHUNK, (uint32_t)(lo - base), (uint32_t)(end - base));
                lo = end;
            }
        }
        return;
    }
    op->unit = op->core;
    op->base = 0;
    int sb = v->space == ISA_SPACE_SBUF;
    uint32_t parts = sb ? k->sbuf_parts : k->psum_parts;
    uint32_t size = sb ? k->sbuf_bytes : k->psum_bytes;
    line_t *lines = (sb ? k->sbuf : k->psum) + (size_t)op->core * parts;
    uint32_t pend = (uint32_t)v->pstart + v->pcount;
    if (pend > parts)
        pend = parts;
    for (uint32_t p = v->pstart; p < pend; p++) {
        op->part = p;
        for (size_t r = 0; r < k->nrng; r++) {
            uint64_t lo = k->rng[r].lo, hi = k->rng[r].hi;
            if (lo >= size)
                continue;
            line_access(k, op, &lines[p], size, (uint32_t)lo, (uint32_t)(hi < size ? hi : size));
        }
    }
}

/* ---- semaphores --------------------------------------------------------------------------------- */

static int has_value(const int64_t *a, uint32_t n, int64_t v)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && a[lo] == v;
}

/* Some wait value N with before < N <= after? */
static int ge_crossed(const semst_t *m, int64_t before, int64_t after)
{
    if (after <= before || !m->nge)
        return 0;
    uint32_t lo = 0, hi = m->nge;
    while (lo < hi) { /* first value > before */
        uint32_t mid = (lo + hi) / 2;
        if (m->ge[mid] <= before)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->nge && m->ge[lo] <= after;
}

/* Apply one post (published with vc) to the mirror of a semaphore. */
static void sem_post(chk_t *k, semst_t *m, const isa_sync_t *p, const uint32_t *vc)
{
    int64_t before = m->value, after = before;
    switch (p->op) {
    case ISA_POST_ADD: after += p->value; break;
    case ISA_POST_SUB: after -= p->value; break;
    default: after = p->value; break;
    }
    m->value = after;
    if (after < before)
        m->monotone = 0;
    if (!m->cum) {
        m->cum = calloc(k->na, sizeof *m->cum);
        if (!m->cum) {
            k->failed = 1;
            return;
        }
    }
    if (vc)
        vc_join(m->cum, vc, k->na);
    int crossing = ge_crossed(m, before, after) ||
                   (after != before && m->neq && has_value(m->eq, m->neq, after));
    if (!crossing)
        return;
    if (m->nx == m->capx) {
        uint32_t nc = m->capx ? m->capx * 2 : 8;
        crossing_t *x = realloc(m->x, nc * sizeof *x);
        if (!x) {
            k->failed = 1;
            return;
        }
        m->x = x;
        m->capx = nc;
    }
    uint32_t *c = vc_copy(k, m->cum);
    if (!c)
        return;
    m->x[m->nx++] = (crossing_t){before, after, c};
}

/* The VC a wait that holds now is ordered after (NULL: nothing). */
static const uint32_t *sem_wait_vc(const semst_t *m, const isa_sync_t *w)
{
    int64_t n = w->value;
    if (w->op == ISA_WAIT_GE && m->monotone) {
        /* values only rose: the crossing of N is the first entry with after >= N */
        uint32_t lo = 0, hi = m->nx;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (m->x[mid].after < n)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < m->nx && m->x[lo].before < n)
            return m->x[lo].vc;
        return NULL;
    }
    for (uint32_t i = m->nx; i-- > 0;) {
        const crossing_t *x = &m->x[i];
        if (w->op == ISA_WAIT_GE ? (x->before < n && n <= x->after)
                                 : (x->after == n && x->before != n))
            return x->vc;
    }
    return NULL;
}

/* ---- the observer ------------------------------------------------------------------------------- */

static uint32_t global_index(const chk_t *k, const isa_instr_t *in)
{
    return (uint32_t)(in - k->prog->instrs);
}

static int dtype_float(uint8_t dt)
{
    return isa_dtype_is_float((isa_dtype_t)dt);
}

/* Does any element of v hold NaN or Inf? */
static int view_nonfinite(chk_t *k, core_t *c, const isa_view_t *v)
{
    if (!dtype_float(v->dtype))
        return 0;
    uint64_t n = isa_view_elems(v);
    if (n > k->fcap) {
        float *b = realloc(k->fbuf, (size_t)n * sizeof *b);
        if (!b) {
            k->failed = 1;
            return 0;
        }
        k->fbuf = b;
        k->fcap = (size_t)n;
    }
    mdl_view_read_f32(&c->fs.mem, v, k->fbuf);
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(k->fbuf[i]))
            return 1;
    return 0;
}

/*
 * NaN/Inf check after an instruction's effect: the first instruction whose written values
 * hold NaN or Inf while none of its inputs (views or immediates) does. Propagation of a
 * NaN or Inf is not production; a memset to -inf is not either.
 */
static void nan_check(chk_t *k, sim_t *s, uint32_t core, uint32_t acc, const isa_instr_t *in,
                      const isa_view_t *const *wv, unsigned nw, const isa_view_t *const *rv,
                      unsigned nr, int imm_nonfinite)
{
    if (k->nan_found || !(k->checks & CHK_NAN) || s->opt.timing_only)
        return;
    core_t *c = &s->cores[core];
    if (!c->fs_ready)
        return;
    const isa_view_t *bad = NULL;
    for (unsigned i = 0; i < nw && !bad; i++)
        if (view_nonfinite(k, c, wv[i]))
            bad = wv[i];
    if (!bad || imm_nonfinite)
        return;
    for (unsigned i = 0; i < nr; i++)
        if (view_nonfinite(k, c, rv[i]))
            return;
    k->nan_found = 1;
    fkey_t key;
    memset(&key, 0, sizeof key);
    key.kind = CHK_KIND_NAN;
    int created;
    chk_finding_t *f = finding_get(k, &key, &created);
    if (!f)
        return;
    f->kind = CHK_KIND_NAN;
    f->count = 1;
    f->first = make_site(k, acc, global_index(k, in), 1);
    f->has_range = 1;
    f->space = bad->space;
    f->unit = bad->space == ISA_SPACE_HBM ? core / ISA_CORES_PER_CHIP : core;
    f->p0 = bad->space == ISA_SPACE_HBM ? 0 : bad->pstart;
    f->p1 = bad->space == ISA_SPACE_HBM ? 1 : (uint32_t)bad->pstart + bad->pcount;
    int64_t lo, hi;
    isa_view_byte_range(bad, &lo, &hi);
    f->lo = (uint64_t)lo;
    f->hi = (uint64_t)hi;
}

static void op_setup(chk_t *k, op_t *op, uint32_t core, uint32_t acc, uint32_t instr)
{
    memset(op, 0, sizeof *op);
    op->acc = acc;
    op->vc = vc_of(k, acc);
    op->clock = op->vc[acc];
    op->instr = instr;
    op->core = core;
    op->pe_acc = acc_engine(core, ISA_ENGINE_PE);
    op->races = (k->checks & CHK_RACES) != 0;
    op->track_reads = op->races;
}

static int shadow_wanted(const chk_t *k)
{
    return (k->checks & (CHK_RACES | CHK_UNINIT | CHK_PSUM)) != 0;
}

static void do_read(chk_t *k, op_t *op, const isa_view_t *v, int psum_acc, int psum_open)
{
    op->read = 1;
    op->write = 0;
    op->psum_acc = (uint8_t)(psum_acc && (k->checks & CHK_PSUM));
    op->psum_open = (uint8_t)(psum_open && (k->checks & CHK_PSUM));
    op->uninit = (k->checks & CHK_UNINIT) != 0;
    access_view(k, op, v);
}

static void do_write(chk_t *k, op_t *op, const isa_view_t *v)
{
    op->read = 0;
    op->write = 1;
    op->psum_acc = op->psum_open = op->uninit = 0;
    access_view(k, op, v);
}

/* Views of a compute instruction with their modes; returns the count. */
static unsigned instr_views(const chk_t *k, const isa_instr_t *in, const isa_view_t **v,
                            uint8_t *mode)
{
    const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
    const isa_arg_t *args = isa_instr_args(k->prog, in);
    unsigned n = 0;
    for (unsigned s = 0; s < info->nslots; s++) {
        uint8_t m = k->slot_mode[in->op][s];
        if (!m || !args[s].present || !args[s].is_view)
            continue;
        if (in->op == ISA_OP_MATMUL && s == 0 && k->matmul_acc_slot >= 0 &&
            args[k->matmul_acc_slot].present)
            m = AM_RW;
        v[n] = &k->prog->views[args[s].index];
        mode[n++] = m;
    }
    return n;
}

static int immediates_nonfinite(const chk_t *k, const isa_instr_t *in)
{
    const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
    const isa_arg_t *args = isa_instr_args(k->prog, in);
    for (unsigned s = 0; s < info->nslots; s++) {
        uint8_t kind = info->slots[s].kind;
        if (args[s].present && !args[s].is_view &&
            (kind == ISA_KIND_SCALAR || kind == ISA_KIND_FLOAT) && !isfinite(args[s].v.f))
            return 1;
    }
    return 0;
}

static void on_instr_start(void *ctx, sim_t *s, uint32_t core, uint8_t engine, uint32_t index,
                           const isa_instr_t *in)
{
    (void)s;
    chk_t *k = ctx;
    uint32_t acc = acc_engine(core, engine);
    uint32_t *vc = vc_of(k, acc);
    for (unsigned i = 0; i < in->nwait; i++) {
        const semst_t *m = &k->sems[(size_t)core * ISA_MAX_SEMS + in->wait[i].sem];
        const uint32_t *w = sem_wait_vc(m, &in->wait[i]);
        if (w) {
            vc_join(vc, w, k->na);
            /* a post is made at completion: the engine's own instructions up to the one
             * whose epoch the post carries (it completes in order) are known complete */
            if (k->self_done && w[acc] > k->self_done[acc])
                k->self_done[acc] = w[acc];
        }
    }
    vc[acc]++;
    uint32_t g = global_index(k, in);
    if (in->op == ISA_OP_DMA) {
        const isa_arg_t *args = isa_instr_args(k->prog, in);
        unsigned q = k->dma_queue_slot >= 0 && args[k->dma_queue_slot].present
                         ? (unsigned)args[k->dma_queue_slot].v.i
                         : 0;
        /* The transfer runs outside the engine's interlock (docs/language.md 8): it is not
         * ordered after the engine's earlier instructions, which may still be executing
         * when it is issued, only after those known complete (through a semaphore). */
        const uint32_t *snap = vc;
        if (k->tmpvc && k->self_done) {
            memcpy(k->tmpvc, vc, (size_t)k->na * sizeof *vc);
            k->tmpvc[acc] = k->self_done[acc];
            snap = k->tmpvc;
        }
        snapq_push(k, &k->dmaq[(size_t)core * NQUEUES + (q % NQUEUES)], index, snap);
        return;
    }
    if (in->npost)
        snapq_push(k, &k->postq[(size_t)core * ISA_ENGINE_COUNT + engine], index, vc);
    if (in->op == ISA_OP_NOP || in->engine == ISA_ENGINE_CC || !shadow_wanted(k))
        return;
    const isa_view_t *v[ISA_MAX_SLOTS];
    uint8_t mode[ISA_MAX_SLOTS];
    unsigned n = instr_views(k, in, v, mode);
    op_t op;
    op_setup(k, &op, core, acc, g);
    int is_matmul_acc = in->op == ISA_OP_MATMUL && mode[0] == AM_RW;
    for (unsigned i = 0; i < n; i++)
        if (mode[i] & AM_R)
            do_read(k, &op, v[i], is_matmul_acc && i == 0,
                    v[i]->space == ISA_SPACE_PSUM && engine != ISA_ENGINE_PE);
    for (unsigned i = 0; i < n; i++)
        if (mode[i] & AM_W)
            do_write(k, &op, v[i]);
}

static void on_instr_done(void *ctx, sim_t *s, uint32_t core, uint8_t engine, uint32_t index,
                          const isa_instr_t *in)
{
    (void)index;
    chk_t *k = ctx;
    if (k->nan_found || !(k->checks & CHK_NAN))
        return;
    const isa_view_t *v[ISA_MAX_SLOTS], *wv[ISA_MAX_SLOTS], *rv[ISA_MAX_SLOTS];
    uint8_t mode[ISA_MAX_SLOTS];
    unsigned n = instr_views(k, in, v, mode), nw = 0, nr = 0;
    for (unsigned i = 0; i < n; i++) {
        if (mode[i] & AM_W)
            wv[nw++] = v[i];
        if (mode[i] & AM_R)
            rv[nr++] = v[i];
    }
    int imm = immediates_nonfinite(k, in);
    if (in->op == ISA_OP_MATMUL) {
        /* the loaded weights are an input too */
        core_t *c = &s->cores[core];
        const mdl_pe_state_t *pe = &c->fs.pe;
        for (uint64_t i = 0; i < (uint64_t)pe->k * pe->m && !imm; i++)
            if (!isfinite(pe->weights[i]))
                imm = 1;
    }
    nan_check(k, s, core, acc_engine(core, engine), in, wv, nw, rv, nr, imm);
}

static void on_dma_landed(void *ctx, sim_t *s, uint32_t core, uint8_t queue, uint8_t engine,
                          uint32_t index, const isa_instr_t *in)
{
    (void)engine;
    (void)index;
    chk_t *k = ctx;
    uint32_t acc = acc_queue(core, queue % NQUEUES);
    uint32_t *vc = vc_of(k, acc);
    uint32_t *snap = snapq_take(&k->dmaq[(size_t)core * NQUEUES + queue % NQUEUES], NO_INSTR);
    if (snap) {
        vc_join(vc, snap, k->na);
        vc_release(k, snap);
    }
    vc[acc]++;
    k->last_landed[core] = (uint8_t)(queue % NQUEUES);
    const isa_arg_t *args = isa_instr_args(k->prog, in);
    const isa_view_t *dst = &k->prog->views[args[0].index];
    const isa_view_t *src = &k->prog->views[args[1].index];
    int accumulate = k->dma_acc_slot >= 0 && args[k->dma_acc_slot].present;
    if (shadow_wanted(k)) {
        op_t op;
        op_setup(k, &op, core, acc, global_index(k, in));
        do_read(k, &op, src, 0, 0);
        if (accumulate)
            do_read(k, &op, dst, 0, 0);
        do_write(k, &op, dst);
    }
    const isa_view_t *rv[2] = {src, dst};
    nan_check(k, s, core, acc, in, &dst, 1, rv, accumulate ? 2u : 1u, 0);
}

static void on_collective(void *ctx, sim_t *s, int phase, uint32_t core, uint32_t index,
                          const isa_instr_t *in)
{
    chk_t *k = ctx;
    uint32_t acc = acc_engine(core, ISA_ENGINE_CC);
    uint32_t *vc = vc_of(k, acc);
    if (phase == 0) {
        if (!k->barrier_open) {
            memset(k->barrier, 0, (size_t)k->na * sizeof *k->barrier);
            k->barrier_open = 1;
        }
        vc_join(k->barrier, vc, k->na);
        return;
    }
    /* every member's accesses carry its arrival epoch (ticked when the collective started
     * on its cc engine, parked since), and every member knows every arrival: the accesses
     * of one collective are ordered with each other, as the collective is one operation */
    k->barrier_open = 0;
    vc_join(vc, k->barrier, k->na);
    snap_t *sn = snapq_find(&k->postq[(size_t)core * ISA_ENGINE_COUNT + ISA_ENGINE_CC], index);
    if (sn)
        memcpy(sn->vc, vc, (size_t)k->na * sizeof *vc);
    const isa_arg_t *args = isa_instr_args(k->prog, in);
    const isa_view_t *d = NULL, *src = NULL;
    if (in->op == ISA_OP_SEND)
        src = &k->prog->views[args[0].index];
    else if (in->op == ISA_OP_RECV)
        d = &k->prog->views[args[0].index];
    else {
        d = &k->prog->views[args[0].index];
        src = &k->prog->views[args[1].index];
    }
    if (shadow_wanted(k)) {
        op_t op;
        op_setup(k, &op, core, acc, global_index(k, in));
        if (src)
            do_read(k, &op, src, 0, 0);
        if (d)
            do_write(k, &op, d);
    }
    if (d)
        nan_check(k, s, core, acc, in, &d, 1, &src, src ? 1u : 0u, 0);
}

static void on_posts(void *ctx, sim_t *s, uint32_t core, int by_engine, uint32_t by_index,
                     const isa_instr_t *in)
{
    (void)s;
    chk_t *k = ctx;
    const uint32_t *vc;
    uint32_t *owned = NULL;
    uint32_t acc;
    if (by_engine >= ISA_ENGINE_COUNT) {
        acc = acc_queue(core, k->last_landed[core]);
        vc = vc_of(k, acc);
    } else {
        acc = acc_engine(core, (unsigned)by_engine);
        owned = snapq_take(&k->postq[(size_t)core * ISA_ENGINE_COUNT + (unsigned)by_engine],
                           by_index);
        vc = owned ? owned : vc_of(k, acc);
    }
    for (unsigned i = 0; i < in->npost; i++) {
        const isa_sync_t *p = &in->post[i];
        semst_t *m = &k->sems[(size_t)core * ISA_MAX_SEMS + p->sem];
        int64_t before = m->value;
        sem_post(k, m, p, vc);
        if ((k->checks & CHK_SEMS) && (m->value > INT32_MAX || m->value < INT32_MIN)) {
            fkey_t key;
            memset(&key, 0, sizeof key);
            key.kind = CHK_KIND_SEM_OVERFLOW;
            key.unit = core;
            key.sem = p->sem;
            key.instr1 = global_index(k, in);
            int created;
            chk_finding_t *f = finding_get(k, &key, &created);
            if (f && created) {
                f->kind = CHK_KIND_SEM_OVERFLOW;
                f->unit = core;
                f->sem = p->sem;
                f->value = m->value;
                f->count = 1;
                f->first = make_site(k, acc, global_index(k, in), 0);
            }
            m->value = before; /* the simulator stops here; keep the mirror sane */
        }
    }
    vc_release(k, owned);
}

/* ---- construction -------------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int sorted_unique(int64_t *a, uint32_t *n)
{
    if (*n < 2)
        return 0;
    qsort(a, *n, sizeof *a, cmp_i64);
    uint32_t out = 1;
    for (uint32_t i = 1; i < *n; i++)
        if (a[i] != a[out - 1])
            a[out++] = a[i];
    *n = out;
    return 0;
}

/* The wait values of the program per (core, semaphore), and the initial values. */
static int build_sems(chk_t *k)
{
    const isa_program_t *p = k->prog;
    for (uint32_t c = 0; c < k->ncores; c++) {
        for (uint32_t i = 0; i < ISA_MAX_SEMS; i++)
            k->sems[(size_t)c * ISA_MAX_SEMS + i].monotone = 1;
        for (uint32_t i = 0; i < p->nsems; i++)
            if (p->sems[i].core == -1 || (uint32_t)p->sems[i].core == c)
                k->sems[(size_t)c * ISA_MAX_SEMS + p->sems[i].index].value = p->sems[i].init;
        for (unsigned e = 0; e < ISA_ENGINE_COUNT; e++) {
            const isa_stream_t *st = isa_stream(p, c, (isa_engine_t)e);
            for (uint32_t j = 0; j < st->count; j++) {
                const isa_instr_t *in = &p->instrs[st->first + j];
                for (unsigned w = 0; w < in->nwait; w++) {
                    semst_t *m = &k->sems[(size_t)c * ISA_MAX_SEMS + in->wait[w].sem];
                    int ge = in->wait[w].op == ISA_WAIT_GE;
                    int64_t **arr = ge ? &m->ge : &m->eq;
                    uint32_t *cnt = ge ? &m->nge : &m->neq;
                    /* capacity: powers of two */
                    if ((*cnt & (*cnt - 1)) == 0) {
                        uint32_t nc = *cnt ? *cnt * 2 : 4;
                        int64_t *na = realloc(*arr, nc * sizeof *na);
                        if (!na)
                            return -1;
                        *arr = na;
                    }
                    (*arr)[(*cnt)++] = in->wait[w].value;
                }
            }
        }
        for (uint32_t i = 0; i < ISA_MAX_SEMS; i++) {
            semst_t *m = &k->sems[(size_t)c * ISA_MAX_SEMS + i];
            sorted_unique(m->ge, &m->nge);
            sorted_unique(m->eq, &m->neq);
        }
    }
    return 0;
}

static int box_overlap(const isa_view_t *a, const isa_view_t *b)
{
    int64_t alo, ahi, blo, bhi;
    isa_view_byte_range(a, &alo, &ahi);
    isa_view_byte_range(b, &blo, &bhi);
    return a->space == b->space && a->pstart < b->pstart + b->pcount &&
           b->pstart < a->pstart + a->pcount && alo < bhi && blo < ahi;
}

/*
 * For each pe instruction writing PSUM: the next pe write of overlapping bytes in pe's
 * stream, when it is a `matmul ..., acc` (the accumulation group is still open after it).
 * Walked backwards with the list of later writers, nearest first; a writer whose box
 * covers a later one hides it from everything before.
 */
static int build_groups(chk_t *k)
{
    const isa_program_t *p = k->prog;
    for (uint32_t i = 0; i < p->ninstrs; i++)
        k->next_acc[i] = NO_INSTR;
    uint32_t *later = NULL;
    uint32_t nl = 0, capl = 0;
    for (uint32_t c = 0; c < k->ncores; c++) {
        const isa_stream_t *st = isa_stream(p, c, ISA_ENGINE_PE);
        nl = 0;
        for (uint32_t j = st->count; j-- > 0;) {
            uint32_t g = st->first + j;
            const isa_instr_t *in = &p->instrs[g];
            if (in->op != ISA_OP_MATMUL && in->op != ISA_OP_TRANSPOSE)
                continue;
            const isa_view_t *d = &p->views[isa_instr_args(p, in)[0].index];
            if (d->space != ISA_SPACE_PSUM)
                continue;
            for (uint32_t l = 0; l < nl; l++) {
                const isa_instr_t *nx = &p->instrs[later[l]];
                if (box_overlap(d, &p->views[isa_instr_args(p, nx)[0].index])) {
                    if (nx->op == ISA_OP_MATMUL && k->matmul_acc_slot >= 0 &&
                        isa_instr_args(p, nx)[k->matmul_acc_slot].present)
                        k->next_acc[g] = later[l];
                    break;
                }
            }
            /* drop later writers this one covers, then put it first */
            int64_t dlo, dhi;
            isa_view_byte_range(d, &dlo, &dhi);
            uint32_t out = 0;
            for (uint32_t l = 0; l < nl; l++) {
                const isa_view_t *o = &p->views[isa_instr_args(p, &p->instrs[later[l]])[0].index];
                int64_t olo, ohi;
                isa_view_byte_range(o, &olo, &ohi);
                int covered = d->pstart <= o->pstart &&
                              d->pstart + d->pcount >= o->pstart + o->pcount && dlo <= olo &&
                              dhi >= ohi;
                if (!covered)
                    later[out++] = later[l];
            }
            nl = out;
            if (nl + 1 > capl) {
                uint32_t nc = capl ? capl * 2 : 64;
                uint32_t *np = realloc(later, nc * sizeof *np);
                if (!np) {
                    free(later);
                    return -1;
                }
                later = np;
                capl = nc;
            }
            memmove(&later[1], &later[0], nl * sizeof *later);
            later[0] = g;
            nl++;
        }
    }
    free(later);
    return 0;
}

static void build_slot_modes(chk_t *k)
{
    memset(k->slot_mode, 0, sizeof k->slot_mode);
    k->matmul_acc_slot = k->dma_acc_slot = k->dma_queue_slot = -1;
    for (int op = 0; op < ISA_OP_COUNT; op++) {
        const isa_op_info_t *info = isa_op_info((isa_op_t)op);
        for (unsigned s = 0; s < info->nslots; s++) {
            const char *name = info->slots[s].name;
            uint8_t kind = info->slots[s].kind;
            if (op == ISA_OP_MATMUL && strcmp(name, "acc") == 0)
                k->matmul_acc_slot = (int)s;
            if (op == ISA_OP_DMA && strcmp(name, "accumulate") == 0)
                k->dma_acc_slot = (int)s;
            if (op == ISA_OP_DMA && strcmp(name, "queue") == 0)
                k->dma_queue_slot = (int)s;
            if (kind != ISA_KIND_VIEW && kind != ISA_KIND_SCALAR)
                continue;
            uint8_t m = AM_R;
            if (strcmp(name, "D") == 0)
                m = op == ISA_OP_SELECT ? AM_RW : AM_W;
            else if (op == ISA_OP_ACTIVATE && strcmp(name, "sum") == 0)
                m = AM_W;
            else if (op == ISA_OP_ACTIVATE && strcmp(name, "sumacc") == 0)
                m = AM_RW;
            k->slot_mode[op][s] = m;
        }
    }
}

/* HBM inputs and inouts are bound before the run: written by nobody in particular. */
static void mark_inputs(chk_t *k)
{
    const isa_program_t *p = k->prog;
    for (uint32_t t = 0; t < p->ntensors; t++) {
        const isa_tensor_t *T = &p->tensors[t];
        if (T->space != ISA_SPACE_HBM || (T->kind != ISA_TK_INPUT && T->kind != ISA_TK_INOUT))
            continue;
        if (T->chip < 0 || (uint32_t)T->chip >= k->nchips)
            continue;
        uint64_t bytes = sim_tensor_elems(p, t) * isa_dtype_size((isa_dtype_t)T->dtype);
        op_t op;
        memset(&op, 0, sizeof op);
        op.acc = ACC_INIT;
        op.instr = NO_INSTR;
        op.write = 1;
        op.space = ISA_SPACE_HBM;
        op.unit = (uint32_t)T->chip;
        uint64_t lo = T->offset, hi = T->offset + bytes;
        while (lo < hi) {
            uint64_t chunk = lo >> HBM_CHUNK_BITS;
            uint64_t base = chunk << HBM_CHUNK_BITS;
            uint64_t end = base + HBM_CHUNK < hi ? base + HBM_CHUNK : hi;
            line_t *L = hbm_line(k, (uint32_t)T->chip, chunk);
            if (!L)
                break;
            op.base = base;
            line_access(k, &op, L, HBM_CHUNK, (uint32_t)(lo - base), (uint32_t)(end - base));
            lo = end;
        }
    }
}

ncsim_status_t chk_create(const isa_program_t *prog, const mdl_arch_t *arch, unsigned checks,
                          chk_t **out)
{
    *out = NULL;
    chk_t *k = calloc(1, sizeof *k);
    if (!k)
        return NCSIM_NOMEM;
    k->prog = prog;
    k->arch = arch;
    k->checks = checks;
    k->ncores = prog->ncores;
    k->nchips = prog->chips;
    k->na = k->ncores * NACC;
    k->sbuf_parts = arch->sbuf.partitions;
    k->psum_parts = arch->psum.partitions;
    k->sbuf_bytes = (uint32_t)arch->sbuf.bytes_per_partition;
    k->psum_bytes = (uint32_t)arch->psum.bytes_per_partition;
    uint64_t leaf_bytes = (uint64_t)HBM_CHUNK << HBM_LEAF_BITS;
    k->hbm_leaves = (arch->hbm.size_bytes + leaf_bytes - 1) / leaf_bytes;
    k->vcs = calloc((size_t)k->na * k->na, sizeof *k->vcs);
    k->instr_core = malloc((prog->ninstrs + 1) * sizeof *k->instr_core);
    k->next_acc = malloc((prog->ninstrs + 1) * sizeof *k->next_acc);
    k->sbuf = calloc((size_t)k->ncores * k->sbuf_parts, sizeof *k->sbuf);
    k->psum = calloc((size_t)k->ncores * k->psum_parts, sizeof *k->psum);
    k->hbm = calloc(k->nchips, sizeof *k->hbm);
    k->sems = calloc((size_t)k->ncores * ISA_MAX_SEMS, sizeof *k->sems);
    k->postq = calloc((size_t)k->ncores * ISA_ENGINE_COUNT, sizeof *k->postq);
    k->dmaq = calloc((size_t)k->ncores * NQUEUES, sizeof *k->dmaq);
    k->last_landed = calloc(k->ncores, 1);
    k->barrier = calloc(k->na, sizeof *k->barrier);
    k->self_done = calloc(k->na, sizeof *k->self_done);
    k->tmpvc = calloc(k->na, sizeof *k->tmpvc);
    if (!k->self_done || !k->tmpvc)
        k->failed = 1;
    if (!k->vcs || !k->instr_core || !k->next_acc || !k->sbuf || !k->psum || !k->hbm ||
        !k->sems || !k->postq || !k->dmaq || !k->last_landed || !k->barrier)
        goto oom;
    for (uint32_t c = 0; c < k->nchips; c++) {
        k->hbm[c] = calloc(k->hbm_leaves ? k->hbm_leaves : 1, sizeof *k->hbm[c]);
        if (!k->hbm[c])
            goto oom;
    }
    for (uint32_t c = 0; c < k->ncores; c++)
        for (unsigned e = 0; e < ISA_ENGINE_COUNT; e++) {
            const isa_stream_t *st = isa_stream(prog, c, (isa_engine_t)e);
            for (uint32_t j = 0; j < st->count; j++)
                k->instr_core[st->first + j] = c;
        }
    build_slot_modes(k);
    if (build_sems(k) || build_groups(k))
        goto oom;
    mark_inputs(k);
    if (k->failed)
        goto oom;
    k->obs.ctx = k;
    k->obs.instr_start = on_instr_start;
    k->obs.instr_done = (checks & CHK_NAN) ? on_instr_done : NULL;
    k->obs.dma_landed = on_dma_landed;
    k->obs.collective = on_collective;
    k->obs.posts = on_posts;
    *out = k;
    return NCSIM_OK;
oom:
    chk_destroy(k);
    return NCSIM_NOMEM;
}

void chk_destroy(chk_t *k)
{
    if (!k)
        return;
    if (k->sbuf)
        for (size_t i = 0; i < (size_t)k->ncores * k->sbuf_parts; i++)
            line_free(&k->sbuf[i]);
    if (k->psum)
        for (size_t i = 0; i < (size_t)k->ncores * k->psum_parts; i++)
            line_free(&k->psum[i]);
    if (k->hbm)
        for (uint32_t c = 0; c < k->nchips; c++) {
            if (!k->hbm[c])
                continue;
            for (uint64_t l = 0; l < k->hbm_leaves; l++) {
                if (!k->hbm[c][l])
                    continue;
                for (size_t i = 0; i < ((size_t)1 << HBM_LEAF_BITS); i++)
                    line_free(&k->hbm[c][l][i]);
                free(k->hbm[c][l]);
            }
            free(k->hbm[c]);
        }
    if (k->sems)
        for (size_t i = 0; i < (size_t)k->ncores * ISA_MAX_SEMS; i++) {
            semst_t *m = &k->sems[i];
            for (uint32_t j = 0; j < m->nx; j++)
                free(m->x[j].vc);
            free(m->x);
            free(m->cum);
            free(m->ge);
            free(m->eq);
        }
    snapq_t *qs[2] = {k->postq, k->dmaq};
    size_t nq[2] = {(size_t)k->ncores * ISA_ENGINE_COUNT, (size_t)k->ncores * NQUEUES};
    for (int t = 0; t < 2; t++)
        if (qs[t])
            for (size_t i = 0; i < nq[t]; i++) {
                for (uint32_t j = 0; j < qs[t][i].n; j++)
                    free(qs[t][i].a[(qs[t][i].head + j) % qs[t][i].cap].vc);
                free(qs[t][i].a);
            }
    for (uint32_t i = 0; i < k->npool; i++)
        free(k->pool[i]);
    free(k->pool);
    free(k->sbuf);
    free(k->psum);
    free(k->hbm);
    free(k->sems);
    free(k->postq);
    free(k->dmaq);
    free(k->last_landed);
    free(k->barrier);
    free(k->self_done);
    free(k->tmpvc);
    free(k->vcs);
    free(k->instr_core);
    free(k->next_acc);
    free(k->rng);
    free(k->fbuf);
    free(k->f);
    free(k->keys);
    free(k->tab);
    free(k);
}

const sim_observer_t *chk_observer(chk_t *k)
{
    return &k->obs;
}

/* ---- static checks -------------------------------------------------------------------------------- */

/*
 * Per (core, semaphore): the largest and smallest value the posts could ever produce (every
 * increment and the largest `= N`, every decrement and the smallest `= N`). A `>= N` wait
 * above the largest, or an `== N` wait outside the range, can never hold. A post that raises
 * or sets the value is an orphan when no wait on that semaphore of that core can observe it:
 * none on another engine, none later on its own engine (a transfer's posts: its issuing
 * engine). Decrements take credits and signal nobody: they are never orphans.
 */
/*
 * Views that start inside a tensor and run past its end (or its partitions): a raw view
 * computed wrongly reads or writes the neighbouring tensor without any error. A view is fine
 * when some tensor of its memory holds it whole (pinned tensors may alias); a view that
 * starts in no tensor (raw scratch space) is not judged.
 */
static void check_view_bounds(chk_t *k)
{
    const isa_program_t *p = k->prog;
    for (uint32_t c = 0; c < k->ncores; c++)
        for (unsigned e = 0; e < ISA_ENGINE_COUNT; e++) {
            const isa_stream_t *st = isa_stream(p, c, (isa_engine_t)e);
            for (uint32_t j = 0; j < st->count; j++) {
                uint32_t g = st->first + j;
                const isa_instr_t *in = &p->instrs[g];
                const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
                const isa_arg_t *args = isa_instr_args(p, in);
                for (unsigned sl = 0; sl < info->nslots; sl++) {
                    if (!args[sl].present || !args[sl].is_view)
                        continue;
                    const isa_view_t *v = &p->views[args[sl].index];
                    int64_t slo, shi;
                    isa_view_byte_range(v, &slo, &shi);
                    uint64_t lo = slo < 0 ? 0 : (uint64_t)slo, hi = shi < 0 ? 0 : (uint64_t)shi;
                    uint32_t p0 = v->space == ISA_SPACE_HBM ? 0 : v->pstart;
                    uint32_t p1 = v->space == ISA_SPACE_HBM ? 1 : v->pstart + v->pcount;
                    uint32_t unit = v->space == ISA_SPACE_HBM ? c / ISA_CORES_PER_CHIP : c;
                    int starts_in = 0, held = 0;
                    for (uint32_t t = 0; t < p->ntensors && !held; t++) {
                        const isa_tensor_t *T = &p->tensors[t];
                        if (T->space != v->space)
                            continue;
                        uint64_t es = isa_dtype_size((isa_dtype_t)T->dtype), tlo = T->offset,
                                 thi;
                        uint32_t tp0 = 0, tp1 = 1;
                        if (T->space == ISA_SPACE_HBM) {
                            if (T->chip < 0 || (uint32_t)T->chip != unit)
                                continue;
                            thi = tlo + sim_tensor_elems(p, t) * es;
                        } else {
                            if (T->core != -1 && (uint32_t)T->core != c)
                                continue;
                            uint64_t per = es;
                            for (unsigned d = 1; d < T->ndims; d++)
                                per *= T->dims[d];
                            thi = tlo + per;
                            tp0 = T->pstart;
                            tp1 = T->pstart + (uint32_t)T->dims[0];
                        }
                        if (p0 >= tp0 && p0 < tp1 && lo >= tlo && lo < thi) {
                            starts_in = 1;
                            held = p1 <= tp1 && hi <= thi;
                        }
                    }
                    if (!starts_in || held)
                        continue;
                    fkey_t key;
                    memset(&key, 0, sizeof key);
                    key.kind = CHK_KIND_VIEW_BOUNDS;
                    key.unit = unit;
                    key.instr1 = g;
                    key.acc1 = sl;
                    int created;
                    chk_finding_t *f = finding_get(k, &key, &created);
                    if (!f || !created)
                        continue;
                    f->kind = CHK_KIND_VIEW_BOUNDS;
                    f->has_range = 1;
                    f->space = v->space;
                    f->unit = unit;
                    f->p0 = p0;
                    f->p1 = p1;
                    f->lo = lo;
                    f->hi = hi;
                    f->count = 1;
                    f->first = make_site(k, acc_engine(c, e), g, 0);
                }
            }
        }
}

void chk_static(chk_t *k)
{
    if (k->checks & CHK_VIEWS)
        check_view_bounds(k);
    if (!(k->checks & CHK_SEMS))
        return;
    const isa_program_t *p = k->prog;
    for (uint32_t c = 0; c < k->ncores; c++) {
        for (unsigned sem = 0; sem < ISA_MAX_SEMS; sem++) {
            int declared = 0;
            int64_t init = 0;
            for (uint32_t i = 0; i < p->nsems; i++)
                if (p->sems[i].index == sem &&
                    (p->sems[i].core == -1 || (uint32_t)p->sems[i].core == c)) {
                    declared = 1;
                    init = p->sems[i].init;
                }
            if (!declared)
                continue;
            int64_t inc = 0, dec = 0, maxset = init, minset = init;
            /* the last wait of each engine (index), for the orphan test */
            int64_t last_wait[ISA_ENGINE_COUNT];
            for (unsigned e = 0; e < ISA_ENGINE_COUNT; e++)
                last_wait[e] = -1;
            for (unsigned e = 0; e < ISA_ENGINE_COUNT; e++) {
                const isa_stream_t *st = isa_stream(p, c, (isa_engine_t)e);
                for (uint32_t j = 0; j < st->count; j++) {
                    const isa_instr_t *in = &p->instrs[st->first + j];
                    for (unsigned w = 0; w < in->nwait; w++)
                        if (in->wait[w].sem == sem)
                            last_wait[e] = j;
                    for (unsigned q = 0; q < in->npost; q++) {
                        const isa_sync_t *ps = &in->post[q];
                        if (ps->sem != sem)
                            continue;
                        int64_t v = ps->value;
                        if (ps->op == ISA_POST_ADD || ps->op == ISA_POST_SUB) {
                            if (ps->op == ISA_POST_SUB)
                                v = -v;
                            if (v > 0)
                                inc += v;
                            else
                                dec -= v;
                        } else {
                            if (v > maxset)
                                maxset = v;
                            if (v < minset)
                                minset = v;
                        }
                    }
                }
            }
            int64_t upper = maxset + inc, lower = minset - dec;
            for (unsigned e = 0; e < ISA_ENGINE_COUNT; e++) {
                const isa_stream_t *st = isa_stream(p, c, (isa_engine_t)e);
                for (uint32_t j = 0; j < st->count; j++) {
                    uint32_t g = st->first + j;
                    const isa_instr_t *in = &p->instrs[g];
                    for (unsigned w = 0; w < in->nwait; w++) {
                        const isa_sync_t *ws = &in->wait[w];
                        if (ws->sem != sem)
                            continue;
                        int never = ws->op == ISA_WAIT_GE
                                        ? ws->value > upper
                                        : (ws->value > upper || ws->value < lower);
                        if (!never)
                            continue;
                        fkey_t key;
                        memset(&key, 0, sizeof key);
                        key.kind = CHK_KIND_WAIT_UNSAT;
                        key.unit = c;
                        key.sem = (uint8_t)sem;
                        key.instr1 = g;
                        int created;
                        chk_finding_t *f = finding_get(k, &key, &created);
                        if (!f || !created)
                            continue;
                        f->kind = CHK_KIND_WAIT_UNSAT;
                        f->unit = c;
                        f->sem = (uint8_t)sem;
                        f->value = ws->value > upper ? upper : lower;
                        f->count = 1;
                        f->first = make_site(k, acc_engine(c, e), g, 0);
                    }
                    for (unsigned q = 0; q < in->npost; q++) {
                        const isa_sync_t *ps = &in->post[q];
                        /* a decrement takes a credit: it signals nobody */
                        if (ps->sem != sem ||
                            (ps->op == ISA_POST_SUB && ps->value > 0) ||
                            (ps->op == ISA_POST_ADD && ps->value < 0))
                            continue;
                        int seen = last_wait[e] > (int64_t)j;
                        for (unsigned o = 0; o < ISA_ENGINE_COUNT && !seen; o++)
                            if (o != e && last_wait[o] >= 0)
                                seen = 1;
                        if (seen)
                            continue;
                        fkey_t key;
                        memset(&key, 0, sizeof key);
                        key.kind = CHK_KIND_POST_ORPHAN;
                        key.unit = c;
                        key.sem = (uint8_t)sem;
                        int created;
                        chk_finding_t *f = finding_get(k, &key, &created);
                        if (!f)
                            continue;
                        if (created) {
                            f->kind = CHK_KIND_POST_ORPHAN;
                            f->unit = c;
                            f->sem = (uint8_t)sem;
                            f->first = make_site(k, acc_engine(c, e), g, 0);
                        }
                        f->count++;
                    }
                }
            }
        }
    }
}

/* ---- results --------------------------------------------------------------------------------------- */

int chk_parse_list(const char *list, unsigned *mask, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"races", CHK_RACES}, {"uninit", CHK_UNINIT}, {"nan", CHK_NAN},
                 {"psum", CHK_PSUM},   {"sems", CHK_SEMS},     {"views", CHK_VIEWS},
                 {"all", CHK_ALL}};
    *mask = 0;
    const char *s = list;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        int found = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == n && memcmp(names[i].name, s, n) == 0) {
                *mask |= names[i].bit;
                found = 1;
            }
        if (!found) {
            snprintf(err, errlen, "unknown check '%.*s' (races, uninit, nan, psum, sems, views, all)",
                     (int)n, s);
            return -1;
        }
        s += n;
        if (*s == ',')
            s++;
    }
    if (!*mask) {
        snprintf(err, errlen, "no check named (races, uninit, nan, psum, sems, views, all)");
        return -1;
    }
    return 0;
}

size_t chk_count(const chk_t *k)
{
    return k->nf;
}

const chk_finding_t *chk_finding(const chk_t *k, size_t i)
{
    return i < k->nf ? &k->f[i] : NULL;
}

uint64_t chk_dropped(const chk_t *k)
{
    return k->dropped;
}

int chk_failed(const chk_t *k)
{
    return k->failed;
}

const char *chk_kind_name(chk_kind_t kind)
{
    static const char *const names[] = {
#define XX(id, name) name,
        CHK_KIND_MAP(XX)
#undef XX
    };
    return (unsigned)kind < CHK_KIND_COUNT ? names[kind] : "?";
}

const char *chk_race_name(chk_race_t race)
{
    switch (race) {
    case CHK_RACE_RAW: return "RAW";
    case CHK_RACE_WAR: return "WAR";
    case CHK_RACE_WAW: return "WAW";
    default: return "";
    }
}

const char *chk_space_name(uint8_t space)
{
    switch (space) {
    case ISA_SPACE_SBUF: return "sbuf";
    case ISA_SPACE_PSUM: return "psum";
    case ISA_SPACE_HBM: return "hbm";
    default: return "?";
    }
}

static const char *sem_name(const chk_t *k, uint32_t core, uint8_t sem, char *buf, size_t n)
{
    const isa_program_t *p = k->prog;
    for (uint32_t i = 0; i < p->nsems; i++)
        if (p->sems[i].index == sem && (p->sems[i].core == -1 || (uint32_t)p->sems[i].core == core)) {
            const char *name = isa_string(p, p->sems[i].name);
            if (*name) {
                snprintf(buf, n, "%s", name);
                return buf;
            }
        }
    snprintf(buf, n, "semaphore %u", sem);
    return buf;
}

/* The declared tensor holding the start of a finding's range, or "". */
static const char *tensor_at(const chk_t *k, const chk_finding_t *f)
{
    const isa_program_t *p = k->prog;
    for (uint32_t t = 0; t < p->ntensors; t++) {
        const isa_tensor_t *T = &p->tensors[t];
        if (T->space != f->space)
            continue;
        uint64_t es = isa_dtype_size((isa_dtype_t)T->dtype);
        if (T->space == ISA_SPACE_HBM) {
            if (T->chip >= 0 && (uint32_t)T->chip == f->unit && f->lo >= T->offset &&
                f->lo < T->offset + sim_tensor_elems(p, t) * es)
                return isa_string(p, T->name);
            continue;
        }
        if (T->core != -1 && (uint32_t)T->core != f->unit)
            continue;
        uint64_t per = es;
        for (unsigned d = 1; d < T->ndims; d++)
            per *= T->dims[d];
        if (f->p0 >= T->pstart && f->p0 < T->pstart + T->dims[0] && f->lo >= T->offset &&
            f->lo < T->offset + per)
            return isa_string(p, T->name);
    }
    return "";
}

/* "FILE:LINE: core C ENGINE instruction I `text`", with the queue for a transfer. */
static void site_text(const chk_t *k, const chk_site_t *s, char *buf, size_t n)
{
    if (!s->valid) {
        snprintf(buf, n, "(nothing)");
        return;
    }
    char text[512];
    isa_format_instr(k->prog, s->core, s->instr, text, sizeof text);
    const char *file = isa_string(k->prog, k->prog->source);
    char where[256];
    if (s->instr->line)
        snprintf(where, sizeof where, "%s%s%u: ", *file ? file : "line ", *file ? ":" : "",
                 s->instr->line);
    else
        where[0] = '\0';
    if (s->queue >= 0)
        snprintf(buf, n, "%score %u queue %d (transfer of %s instruction %u) `%s`", where,
                 s->core, s->queue, isa_engine_name((isa_engine_t)s->engine), s->index, text);
    else
        snprintf(buf, n, "%score %u %s instruction %u `%s`", where, s->core,
                 isa_engine_name((isa_engine_t)s->engine), s->index, text);
}

static void range_text(const chk_t *k, const chk_finding_t *f, char *buf, size_t n)
{
    const char *t = tensor_at(k, f);
    char tn[160] = "";
    if (*t)
        snprintf(tn, sizeof tn, " (tensor %s)", t);
    if (f->space == ISA_SPACE_HBM)
        snprintf(buf, n, "HBM of chip %u, bytes [0x%" PRIx64 ", 0x%" PRIx64 ")%s", f->unit,
                 f->lo, f->hi, tn);
    else
        snprintf(buf, n, "%s of core %u, partitions [%u, %u), bytes [%" PRIu64 ", %" PRIu64
                         ")%s",
                 f->space == ISA_SPACE_SBUF ? "SBUF" : "PSUM", f->unit, f->p0, f->p1, f->lo,
                 f->hi, tn);
}

/* Findings with the same kind and the same pair of (accessor, source line) are alike: the
 * iterations of one loop. Text output prints the first of each group. */
static int alike(const chk_finding_t *a, const chk_finding_t *b)
{
    if (a->kind != b->kind || a->race != b->race || a->space != b->space || a->sem != b->sem ||
        a->unit != b->unit)
        return 0;
    const chk_site_t *s[4] = {&a->first, &b->first, &a->second, &b->second};
    for (int i = 0; i < 4; i += 2) {
        if (s[i]->valid != s[i + 1]->valid)
            return 0;
        if (!s[i]->valid)
            continue;
        if (s[i]->core != s[i + 1]->core || s[i]->engine != s[i + 1]->engine ||
            s[i]->queue != s[i + 1]->queue || s[i]->instr->line != s[i + 1]->instr->line ||
            !s[i]->instr->line)
            return 0;
    }
    return 1;
}

static void print_one(const chk_t *k, FILE *out, const chk_finding_t *f, uint64_t more)
{
    char a[1024], b[1024], r[512], sn[64];
    switch (f->kind) {
    case CHK_KIND_RACE:
        range_text(k, f, r, sizeof r);
        site_text(k, &f->first, a, sizeof a);
        site_text(k, &f->second, b, sizeof b);
        fprintf(out, "race %s %s: %s: %s then %s, not ordered by any semaphore chain\n"
                     "  %-5s %s\n  %-5s %s\n",
                chk_race_name(f->race), chk_space_name(f->space), r,
                f->first.write ? "write" : "read", f->second.write ? "write" : "read",
                f->first.write ? "write" : "read", a, f->second.write ? "write" : "read", b);
        break;
    case CHK_KIND_UNINIT:
        range_text(k, f, r, sizeof r);
        site_text(k, &f->second, b, sizeof b);
        fprintf(out, "uninit %s: %s is read but nothing wrote it before\n  read  %s\n",
                chk_space_name(f->space), r, b);
        break;
    case CHK_KIND_NAN:
        range_text(k, f, r, sizeof r);
        site_text(k, &f->first, a, sizeof a);
        fprintf(out, "nan %s: the first instruction that produced NaN or Inf from finite "
                     "inputs, in %s\n  %s\n",
                chk_space_name(f->space), r, a);
        break;
    case CHK_KIND_PSUM_ACC:
        range_text(k, f, r, sizeof r);
        site_text(k, &f->second, b, sizeof b);
        if (f->first.valid) {
            site_text(k, &f->first, a, sizeof a);
            fprintf(out, "psum-acc psum: %s: `matmul ..., acc` accumulates into PSUM last "
                         "written by %s, not pe (the first matmul of a group must not use "
                         "acc)\n  write %s\n  acc   %s\n",
                    r, isa_engine_name((isa_engine_t)f->first.engine), a, b);
        } else {
            fprintf(out, "psum-acc psum: %s: `matmul ..., acc` accumulates into PSUM that was "
                         "never written (the first matmul of a group must not use acc)\n"
                         "  acc   %s\n",
                    r, b);
        }
        break;
    case CHK_KIND_PSUM_OPEN:
        range_text(k, f, r, sizeof r);
        site_text(k, &f->first, a, sizeof a);
        site_text(k, &f->second, b, sizeof b);
        fprintf(out, "psum-open psum: %s is read while its accumulation group is open: "
                     "pe's next write to it is a `matmul ..., acc`\n  last matmul %s\n"
                     "  read        %s\n",
                r, a, b);
        break;
    case CHK_KIND_WAIT_UNSAT:
        site_text(k, &f->first, a, sizeof a);
        fprintf(out, "wait-unsat: a wait on %s can never hold: the posts to it on core %u "
                     "can take it only to %s %" PRId64 "\n  %s\n",
                sem_name(k, f->unit, f->sem, sn, sizeof sn), f->unit,
                f->value < 0 ? "a minimum of" : "at most", f->value, a);
        break;
    case CHK_KIND_POST_ORPHAN:
        site_text(k, &f->first, a, sizeof a);
        fprintf(out, "post-orphan: %s on core %u is posted (%" PRIu64 " post%s) but no wait "
                     "can observe it\n  %s\n",
                sem_name(k, f->unit, f->sem, sn, sizeof sn), f->unit, f->count,
                f->count == 1 ? "" : "s", a);
        break;
    case CHK_KIND_VIEW_BOUNDS:
        range_text(k, f, r, sizeof r);
        site_text(k, &f->first, a, sizeof a);
        fprintf(out, "view-bounds %s: a view covers %s: it starts in that tensor and runs past "
                     "its end (a raw view computed wrongly touches the next tensor)\n  %s\n",
                chk_space_name(f->space), r, a);
        break;
    case CHK_KIND_SEM_OVERFLOW:
        site_text(k, &f->first, a, sizeof a);
        fprintf(out, "sem-overflow: a post takes %s on core %u to %" PRId64
                     ", beyond 32 bits\n  %s\n",
                sem_name(k, f->unit, f->sem, sn, sizeof sn), f->unit, f->value, a);
        break;
    default: break;
    }
    if (more)
        fprintf(out, "  (and %" PRIu64 " more like it: the same source lines, other "
                     "instructions)\n",
                more);
}

void chk_print(const chk_t *k, FILE *out, size_t limit)
{
    uint8_t *done = calloc(k->nf + 1, 1);
    size_t printed = 0, groups = 0;
    for (size_t i = 0; i < k->nf; i++) {
        if (done && done[i])
            continue;
        uint64_t more = 0;
        if (done)
            for (size_t j = i + 1; j < k->nf; j++)
                if (!done[j] && alike(&k->f[i], &k->f[j])) {
                    done[j] = 1;
                    more++;
                }
        groups++;
        if (limit && printed >= limit)
            continue;
        print_one(k, out, &k->f[i], more);
        printed++;
    }
    if (limit && groups > printed)
        fprintf(out, "(%zu more groups of findings not shown)\n", groups - printed);
    if (k->dropped)
        fprintf(out, "(%" PRIu64 " more findings beyond the first %d were not kept)\n",
                k->dropped, MAX_KEPT);
    if (k->failed)
        fprintf(out, "(out of memory while checking: the findings are incomplete)\n");
    free(done);
}

static json_t *site_json(const chk_t *k, const chk_site_t *s)
{
    if (!s->valid)
        return json_null();
    char text[512];
    isa_format_instr(k->prog, s->core, s->instr, text, sizeof text);
    json_t *o = json_object();
    json_object_set_new(o, "core", json_integer(s->core));
    json_object_set_new(o, "engine", json_string(isa_engine_name((isa_engine_t)s->engine)));
    if (s->queue >= 0)
        json_object_set_new(o, "queue", json_integer(s->queue));
    json_object_set_new(o, "index", json_integer(s->index));
    json_object_set_new(o, "line", json_integer(s->instr->line));
    json_object_set_new(o, "text", json_string(text));
    json_object_set_new(o, "access", json_string(s->write ? "write" : "read"));
    return o;
}

char *chk_json(const chk_t *k)
{
    json_t *root = json_object();
    json_t *arr = json_array();
    if (!root || !arr) {
        json_decref(root);
        json_decref(arr);
        return NULL;
    }
    const char *file = isa_string(k->prog, k->prog->source);
    json_object_set_new(root, "program", json_string(file));
    for (size_t i = 0; i < k->nf; i++) {
        const chk_finding_t *f = &k->f[i];
        json_t *o = json_object();
        json_object_set_new(o, "kind", json_string(chk_kind_name(f->kind)));
        if (f->kind == CHK_KIND_RACE)
            json_object_set_new(o, "race", json_string(chk_race_name(f->race)));
        if (f->has_range) {
            json_object_set_new(o, "memory", json_string(chk_space_name(f->space)));
            json_object_set_new(o, f->space == ISA_SPACE_HBM ? "chip" : "core",
                                json_integer(f->unit));
            if (f->space != ISA_SPACE_HBM)
                json_object_set_new(o, "partitions", json_pack("[I, I]", (json_int_t)f->p0,
                                                               (json_int_t)f->p1));
            json_object_set_new(o, "bytes",
                                json_pack("[I, I]", (json_int_t)f->lo, (json_int_t)f->hi));
            const char *t = tensor_at(k, f);
            if (*t)
                json_object_set_new(o, "tensor", json_string(t));
        }
        if (f->kind == CHK_KIND_WAIT_UNSAT || f->kind == CHK_KIND_POST_ORPHAN ||
            f->kind == CHK_KIND_SEM_OVERFLOW) {
            char sn[64];
            json_object_set_new(o, "core", json_integer(f->unit));
            json_object_set_new(o, "semaphore", json_string(sem_name(k, f->unit, f->sem, sn,
                                                                     sizeof sn)));
            if (f->kind != CHK_KIND_POST_ORPHAN)
                json_object_set_new(o, "value", json_integer(f->value));
            else
                json_object_set_new(o, "posts", json_integer((json_int_t)f->count));
        }
        json_object_set_new(o, "first", site_json(k, &f->first));
        json_object_set_new(o, "second", site_json(k, &f->second));
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "findings", arr);
    json_object_set_new(root, "count", json_integer((json_int_t)k->nf));
    json_object_set_new(root, "dropped", json_integer((json_int_t)k->dropped));
    json_object_set_new(root, "complete", json_boolean(!k->failed));
    char *s = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    return s;
}

char *chk_finding_text(const chk_t *k, size_t i)
{
    if (i >= k->nf)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    print_one(k, f, &k->f[i], 0);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}

const char *chk_finding_tensor(const chk_t *k, size_t i)
{
    return i < k->nf && k->f[i].has_range ? tensor_at(k, &k->f[i]) : "";
}
