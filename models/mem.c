/*
 * mem.c -- SBUF, PSUM and lazily paged HBM, and element access through views.
 *
 * Every view access goes through a "plan": the view's dims turned into byte strides over a
 * flat address space (for SBUF/PSUM the partition is the outermost dim, with a stride of one
 * partition), with unit dims dropped and adjacent dims merged where they are contiguous. The
 * innermost dim of the plan is walked as "runs": when a run is contiguous in memory the
 * numerics bulk converters work on memory directly; otherwise the run's elements are gathered
 * into (or scattered from) a small stack buffer and converted in bulk. So the per-element cost
 * is one tight loop of the numerics module, never a call per element.
 *
 * HBM is a table of 1 MiB pages, allocated on first write: a 32 GiB HBM costs its page table
 * (256 KiB) until a program writes to it. Reading a page never written gives zeros.
 */
#include "mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE_MASK (MDL_HBM_PAGE_SIZE - 1)
#define STAGE_BYTES 16384 /* staging buffer for strided runs, on the stack */
#define PLAN_DIMS (ISA_MAX_DIMS + 1)

/* ---- HBM pages ------------------------------------------------------------------------------ */

/*
 * Zeroed memory for SBUF, PSUM and HBM pages straight from mmap: the kernel hands out zero
 * pages as they are first touched, so a simulator pays only for the bytes its program uses.
 * (calloc would do the same only until glibc's adaptive mmap threshold grows past these
 * sizes, after the first free of one; from then on every new simulator would memset tens of
 * megabytes.)
 */
void *mdl_zeroed_alloc(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void mdl_zeroed_free(void *p, size_t n)
{
    if (p)
        munmap(p, n ? n : 1);
}

int mdl_hbm_init(mdl_hbm_t *h, uint64_t size)
{
    memset(h, 0, sizeof *h);
    h->size = size;
    h->npages = (size + PAGE_MASK) >> MDL_HBM_PAGE_BITS;
    if (h->npages) {
        if (h->npages > SIZE_MAX / sizeof *h->pages)
            return -1;
        h->pages = mdl_zeroed_alloc((size_t)h->npages * sizeof *h->pages); /* sparse: see above */
        if (!h->pages) {
            h->npages = 0;
            return -1;
        }
    }
    return 0;
}

void mdl_hbm_free(mdl_hbm_t *h)
{
    if (h->pages)
        for (uint64_t i = 0, left = h->pages_allocated; i < h->npages && left; i++)
            if (h->pages[i]) {
                mdl_zeroed_free(h->pages[i], MDL_HBM_PAGE_SIZE);
                left--;
            }
    mdl_zeroed_free(h->pages, (size_t)h->npages * sizeof *h->pages);
    memset(h, 0, sizeof *h);
}

/* The page holding addr, allocated (zeroed) if needed; NULL when out of memory or range. */
static uint8_t *hbm_page_for_write(mdl_hbm_t *h, uint64_t addr)
{
    uint64_t page = addr >> MDL_HBM_PAGE_BITS;
    if (page >= h->npages)
        return NULL;
    if (!h->pages[page]) {
        h->pages[page] = mdl_zeroed_alloc(MDL_HBM_PAGE_SIZE);
        if (!h->pages[page])
            return NULL;
        h->pages_allocated++;
    }
    return h->pages[page];
}

void mdl_hbm_read(const mdl_hbm_t *h, uint64_t addr, void *dst, size_t n)
{
    uint8_t *d = dst;
    while (n) {
        uint64_t page = addr >> MDL_HBM_PAGE_BITS, off = addr & PAGE_MASK;
        size_t chunk = (size_t)(MDL_HBM_PAGE_SIZE - off);
        if (chunk > n)
            chunk = n;
        if (page < h->npages && h->pages[page])
            memcpy(d, h->pages[page] + off, chunk);
        else
            memset(d, 0, chunk);
        d += chunk;
        addr += chunk;
        n -= chunk;
    }
}

int mdl_hbm_write(mdl_hbm_t *h, uint64_t addr, const void *src, size_t n)
{
    const uint8_t *s = src;
    while (n) {
        uint64_t off = addr & PAGE_MASK;
        size_t chunk = (size_t)(MDL_HBM_PAGE_SIZE - off);
        if (chunk > n)
            chunk = n;
        uint8_t *page = hbm_page_for_write(h, addr);
        if (!page)
            return -1;
        memcpy(page + off, s, chunk);
        s += chunk;
        addr += chunk;
        n -= chunk;
    }
    return 0;
}

/* ---- SBUF / PSUM ------------------------------------------------------------------------------
 */

/*
 * Freed SBUF and PSUM mappings kept for the next simulator of the process. A fresh mapping
 * costs a page fault per 4 KiB page the program touches (1.6 us each on the development
 * machine, a virtual one: about a tenth of a functional GEMM), and unmapping it costs again;
 * runs in one process (the library, Python, a sweep's worker, a benchmark) can reuse the
 * pages instead. A kept mapping is zeroed before reuse, page by page where /proc/self/pagemap
 * shows a page present or swapped out (any other page of a private anonymous mapping has
 * never been written and reads as zero), which touches only what the last program used.
 * Without pagemap nothing is kept; a forked child reads its own. At most POOL_SLOTS mappings
 * (the SBUF and PSUM of the last two cores freed) stay mapped between runs, so a process
 * keeps at most the pages those cores' programs touched.
 */
#define POOL_SLOTS 4

static struct {
    uint8_t *p;
    size_t n;
} pool[POOL_SLOTS];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static int pagemap_fd = -1;
static pid_t pagemap_pid; /* the process pagemap_fd describes (a forked child reopens it) */

/* /proc/self/pagemap of this process, -1 if unavailable. Called with pool_lock held. */
static int pagemap_for_me(void)
{
    const pid_t me = getpid();
    if (pagemap_pid != me) {
        if (pagemap_fd >= 0)
            close(pagemap_fd);
        pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        pagemap_pid = me;
    }
    return pagemap_fd;
}

/* Zero the pages of [p, p + n) that may hold data; -1 when pagemap cannot tell. */
static int zero_used_pages(int fd, uint8_t *p, size_t n)
{
    const long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0 || (uintptr_t)p % (size_t)ps || fd < 0)
        return -1;
    const size_t page = (size_t)ps, npages = (n + page - 1) / page;
    uint64_t ent[512];
    size_t run = 0; /* pages to zero ending before page i + j */
    for (size_t i = 0; i < npages; i += 512) {
        const size_t k = npages - i < 512 ? npages - i : 512;
        const off_t at = (off_t)(((uintptr_t)p / page + i) * sizeof ent[0]);
        if (pread(fd, ent, k * sizeof ent[0], at) != (ssize_t)(k * sizeof ent[0]))
            return -1;
        for (size_t j = 0; j < k; j++) {
            if (ent[j] >> 62) { /* bit 63 present, bit 62 swapped */
                run++;
                continue;
            }
            if (run)
                memset(p + (i + j - run) * page, 0, run * page);
            run = 0;
        }
    }
    if (run)
        memset(p + (npages - run) * page, 0, n - (npages - run) * page);
    return 0;
}

static uint8_t *onchip_map(size_t n)
{
    pthread_mutex_lock(&pool_lock);
    uint8_t *p = NULL;
    for (unsigned i = 0; i < POOL_SLOTS && !p; i++)
        if (pool[i].p && pool[i].n == n) {
            p = pool[i].p;
            memmove(&pool[i], &pool[i + 1], (POOL_SLOTS - 1 - i) * sizeof pool[0]);
            pool[POOL_SLOTS - 1].p = NULL;
        }
    const int fd = p ? pagemap_for_me() : -1;
    pthread_mutex_unlock(&pool_lock);
    if (p && zero_used_pages(fd, p, n)) {
        mdl_zeroed_free(p, n);
        p = NULL;
    }
    return p ? p : mdl_zeroed_alloc(n);
}

/* Keep p (the most recently freed first); the oldest mapping kept makes room if needed. */
static void onchip_unmap(uint8_t *p, size_t n)
{
    if (!p)
        return;
    pthread_mutex_lock(&pool_lock);
    if (pagemap_for_me() >= 0) {
        uint8_t *old = pool[POOL_SLOTS - 1].p;
        const size_t oldn = pool[POOL_SLOTS - 1].n;
        memmove(&pool[1], &pool[0], (POOL_SLOTS - 1) * sizeof pool[0]);
        pool[0].p = p;
        pool[0].n = n;
        p = old;
        n = oldn;
    }
    pthread_mutex_unlock(&pool_lock);
    mdl_zeroed_free(p, n);
}

int mdl_onchip_init(mdl_onchip_t *m, uint32_t partitions, uint64_t bytes)
{
    memset(m, 0, sizeof *m);
    if (bytes && partitions > SIZE_MAX / bytes)
        return -1;
    size_t total = (size_t)partitions * (size_t)bytes;
    m->data = onchip_map(total);
    if (!m->data)
        return -1;
    m->partitions = partitions;
    m->bytes = bytes;
    return 0;
}

void mdl_onchip_free(mdl_onchip_t *m)
{
    onchip_unmap(m->data, (size_t)m->partitions * (size_t)m->bytes);
    memset(m, 0, sizeof *m);
}

/* ---- View checks --------------------------------------------------------------------------------
 */

static const mdl_onchip_t *onchip_of(const mdl_mem_t *m, unsigned space)
{
    return space == ISA_SPACE_SBUF ? m->sbuf : space == ISA_SPACE_PSUM ? m->psum : NULL;
}

/*
 * Byte span of the free pattern relative to the first element: [*lo, *hi) with *lo <= 0.
 * Returns -1 when the arithmetic overflows int64 (only a corrupt or hostile view does that).
 */
static int view_span(const isa_view_t *v, int64_t *lo, int64_t *hi)
{
    const int64_t es = (int64_t)isa_dtype_size((isa_dtype_t)v->dtype);
    int64_t min = 0, max = 0;
    for (unsigned i = 0; i < v->ndims; i++) {
        int64_t span;
        if (__builtin_mul_overflow(v->stride[i], (int64_t)v->count[i] - 1, &span) ||
            __builtin_mul_overflow(span, es, &span))
            return -1;
        if (span < 0 ? __builtin_add_overflow(min, span, &min)
                     : __builtin_add_overflow(max, span, &max))
            return -1;
    }
    *lo = min;
    if (__builtin_add_overflow(max, es, hi))
        return -1;
    return 0;
}

int mdl_view_check(const mdl_mem_t *m, const isa_view_t *v, char *err, size_t errlen)
{
    if (v->space >= ISA_SPACE_COUNT) {
        snprintf(err, errlen, "view has an invalid memory space (%u)", v->space);
        return -1;
    }
    const char *name = isa_space_label((isa_space_t)v->space);
    if (v->dtype >= ISA_DT_COUNT) {
        snprintf(err, errlen, "%s view has an invalid data type (%u)", name, v->dtype);
        return -1;
    }
    const int hbm = v->space == ISA_SPACE_HBM;
    const unsigned maxdims = hbm ? ISA_MAX_HBM_DIMS : ISA_MAX_FREE_DIMS;
    if (v->ndims > maxdims) {
        snprintf(err, errlen, "%s view has %u %sdims (at most %u)", name, v->ndims,
                 hbm ? "" : "free ", maxdims);
        return -1;
    }
    for (unsigned i = 0; i < v->ndims; i++) {
        if (v->count[i] == 0 || v->count[i] > ISA_MAX_COUNT) {
            snprintf(err, errlen, "%s view dim %u has count %u (must be 1..%u)", name,
                     i + (hbm ? 0 : 1), v->count[i], ISA_MAX_COUNT);
            return -1;
        }
    }
    int64_t lo, hi;
    if (view_span(v, &lo, &hi) || v->offset > (uint64_t)INT64_MAX ||
        __builtin_add_overflow(lo, (int64_t)v->offset, &lo) ||
        __builtin_add_overflow(hi, (int64_t)v->offset, &hi)) {
        snprintf(err, errlen, "%s view strides overflow the address space", name);
        return -1;
    }
    if (hbm) {
        if (!m->hbm) {
            snprintf(err, errlen, "no HBM attached");
            return -1;
        }
        if (lo < 0) {
            snprintf(err, errlen, "HBM bytes %" PRId64 "..%" PRId64 " start below address 0", lo,
                     hi);
            return -1;
        }
        if ((uint64_t)hi > m->hbm->size) {
            snprintf(err, errlen, "HBM bytes 0x%" PRIx64 "-0x%" PRIx64 " beyond %" PRIu64, lo, hi,
                     m->hbm->size);
            return -1;
        }
        return 0;
    }
    const mdl_onchip_t *mem = onchip_of(m, v->space);
    if (!mem) {
        snprintf(err, errlen, "no %s attached", name);
        return -1;
    }
    if (v->pcount == 0) {
        snprintf(err, errlen, "%s view has no partitions", name);
        return -1;
    }
    const unsigned plast = (unsigned)v->pstart + v->pcount - 1;
    if (plast >= mem->partitions) {
        snprintf(err, errlen, "%s partitions %u..%u out of range (%u partitions)", name, v->pstart,
                 plast, mem->partitions);
        return -1;
    }
    if (lo < 0 || (uint64_t)hi > mem->bytes) {
        char parts[48];
        if (v->pcount == 1)
            snprintf(parts, sizeof parts, "partition %u", v->pstart);
        else
            snprintf(parts, sizeof parts, "partitions %u..%u", v->pstart, plast);
        if (lo < 0)
            snprintf(err, errlen, "%s bytes %" PRId64 "..%" PRId64 " of %s start below 0", name, lo,
                     hi, parts);
        else
            snprintf(err, errlen, "%s bytes %" PRId64 "..%" PRId64 " of %s beyond %" PRIu64, name,
                     lo, hi, parts, mem->bytes);
        return -1;
    }
    return 0;
}

/* ---- Plans ----------------------------------------------------------------------------------- */

/* A checked view as byte strides over one flat address space (see the file comment). */
typedef struct plan {
    uint8_t *base;  /* SBUF/PSUM data; NULL for HBM */
    mdl_hbm_t *hbm; /* HBM; NULL for SBUF/PSUM */
    isa_dtype_t dtype;
    uint32_t es;    /* element bytes */
    uint64_t start; /* flat byte address of the first element */
    unsigned nd;    /* >= 1 */
    uint64_t count[PLAN_DIMS];
    int64_t bstride[PLAN_DIMS];
    uint64_t total;
    /* Reads of contiguous on-chip runs (each partition's row of a tile, typically) fetch the
     * next run into the cache while converting this one: every run is a new short stream,
     * on another page, that the hardware prefetcher catches only after a few misses, and a
     * tile widened for a matmul was written by a DMA long enough before to have left the
     * cache (this halved the widening's cost in a functional GEMM). Set by plan_reading. */
    int prefetch;
} plan_t;

static void plan_make(const mdl_mem_t *m, const isa_view_t *v, plan_t *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->dtype = (isa_dtype_t)v->dtype;
    pl->es = isa_dtype_size(pl->dtype);
    uint64_t count[PLAN_DIMS];
    int64_t bstride[PLAN_DIMS];
    unsigned n = 0;
    if (v->space == ISA_SPACE_HBM) {
        pl->hbm = m->hbm;
        pl->start = v->offset;
    } else {
        const mdl_onchip_t *mem = onchip_of(m, v->space);
        pl->base = mem->data;
        pl->start = (uint64_t)v->pstart * mem->bytes + v->offset;
        count[n] = v->pcount;
        bstride[n++] = (int64_t)mem->bytes;
    }
    for (unsigned i = 0; i < v->ndims; i++) {
        count[n] = v->count[i];
        bstride[n++] = v->stride[i] * (int64_t)pl->es;
    }
    /* Drop unit dims, then merge each dim into the one outside it when they are contiguous. */
    pl->total = 1;
    for (unsigned i = 0; i < n; i++) {
        pl->total *= count[i];
        if (count[i] == 1)
            continue;
        if (pl->nd > 0 && pl->bstride[pl->nd - 1] == bstride[i] * (int64_t)count[i]) {
            pl->count[pl->nd - 1] *= count[i];
            pl->bstride[pl->nd - 1] = bstride[i];
            continue;
        }
        pl->count[pl->nd] = count[i];
        pl->bstride[pl->nd++] = bstride[i];
    }
    if (pl->nd == 0) {
        pl->nd = 1;
        pl->count[0] = 1;
        pl->bstride[0] = (int64_t)pl->es;
    }
}

/* A plan for reading the data (plan_t.prefetch). */
static void plan_reading(plan_t *pl)
{
    pl->prefetch = pl->base && pl->bstride[pl->nd - 1] == (int64_t)pl->es && pl->nd > 1;
}

/* One run: n elements from flat byte address addr, bs bytes apart. Returns nonzero to stop. */
typedef int (*run_fn)(void *ctx, const plan_t *pl, uint64_t addr, int64_t bs, size_t n);

/* Ask for the first 4 KiB of [p, p + len) to be brought into the cache. */
static inline void prefetch_bytes(const uint8_t *p, uint64_t len)
{
    for (uint64_t o = 0; o < len && o < 4096; o += 64)
        __builtin_prefetch(p + o);
}

/* Visit elements [first, first + n) of the plan, in row-major order, as runs. */
static int plan_walk(const plan_t *pl, uint64_t first, uint64_t n, run_fn fn, void *ctx)
{
    if (pl->nd == 2 && first % pl->count[1] == 0 && n % pl->count[1] == 0) {
        /* whole rows of a two-dimensional plan (a tile: partitions by its free bytes), the
         * most common case: one step per row, no index arithmetic; the row after the next
         * is fetched while this one is converted, as below */
        const uint64_t len = pl->count[1], rows = n / len;
        const int64_t step = pl->bstride[0];
        int64_t addr = (int64_t)pl->start + (int64_t)(first / len) * step;
        for (uint64_t k = 0; k < rows; k++, addr += step) {
            if (pl->prefetch && k + 1 < rows) {
                if (k == 0)
                    prefetch_bytes(pl->base + addr + step, len * pl->es);
                if (k + 2 < rows)
                    prefetch_bytes(pl->base + addr + 2 * step, len * pl->es);
            }
            if (fn(ctx, pl, (uint64_t)addr, pl->bstride[1], (size_t)len))
                return -1;
        }
        return 0;
    }
    uint64_t idx[PLAN_DIMS];
    for (unsigned d = pl->nd; d-- > 0;) {
        idx[d] = first % pl->count[d];
        first /= pl->count[d];
    }
    const unsigned in = pl->nd - 1;
    int64_t addr = (int64_t)pl->start;
    for (unsigned d = 0; d < pl->nd; d++)
        addr += (int64_t)idx[d] * pl->bstride[d];
    int first_run = 1;
    while (n) {
        uint64_t run = pl->count[in] - idx[in];
        if (run > n)
            run = n;
        n -= run;
        idx[in] += run;
        for (unsigned d = in; d > 0 && idx[d] == pl->count[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
        int64_t next = (int64_t)pl->start;
        for (unsigned d = 0; d < pl->nd; d++)
            next += (int64_t)idx[d] * pl->bstride[d];
        if (pl->prefetch && n) {
            /* whole rows (a tile's partitions): the row after the next one is fetched while
             * this one is converted (the next one was, during the last), else the next run */
            const uint64_t left = pl->count[in] - idx[in];
            const uint64_t row = pl->count[in] * pl->es;
            if (idx[in] == 0 && idx[in - 1] + 1 < pl->count[in - 1] && n > pl->count[in]) {
                if (first_run)
                    prefetch_bytes(pl->base + next, row);
                prefetch_bytes(pl->base + next + pl->bstride[in - 1], row);
            } else {
                prefetch_bytes(pl->base + next, (left < n ? left : n) * pl->es);
            }
        }
        first_run = 0;
        if (fn(ctx, pl, (uint64_t)addr, pl->bstride[in], (size_t)run))
            return -1;
        addr = next;
    }
    return 0;
}

/* ---- Raw element movement for one run ----------------------------------------------------------
 */

/* Gather n strided elements of es bytes from p into packed out. */
static void gather_bytes(const uint8_t *p, int64_t bs, size_t n, uint32_t es, uint8_t *out)
{
    if (bs == (int64_t)es) {
        memcpy(out, p, n * es);
        return;
    }
    switch (es) {
    case 1:
        for (size_t i = 0; i < n; i++)
            out[i] = p[(int64_t)i * bs];
        break;
    case 2:
        for (size_t i = 0; i < n; i++)
            memcpy(out + 2 * i, p + (int64_t)i * bs, 2);
        break;
    case 4:
        for (size_t i = 0; i < n; i++)
            memcpy(out + 4 * i, p + (int64_t)i * bs, 4);
        break;
    default:
        for (size_t i = 0; i < n; i++)
            memcpy(out + es * i, p + (int64_t)i * bs, es);
        break;
    }
}

static void scatter_bytes(uint8_t *p, int64_t bs, size_t n, uint32_t es, const uint8_t *in)
{
    if (bs == (int64_t)es) {
        memmove(p, in, n * es);
        return;
    }
    switch (es) {
    case 1:
        for (size_t i = 0; i < n; i++)
            p[(int64_t)i * bs] = in[i];
        break;
    case 2:
        for (size_t i = 0; i < n; i++)
            memcpy(p + (int64_t)i * bs, in + 2 * i, 2);
        break;
    case 4:
        for (size_t i = 0; i < n; i++)
            memcpy(p + (int64_t)i * bs, in + 4 * i, 4);
        break;
    default:
        for (size_t i = 0; i < n; i++)
            memcpy(p + (int64_t)i * bs, in + es * i, es);
        break;
    }
}

/* Read the raw bytes of an HBM run into packed out; zeros where never written. */
static void hbm_gather(const mdl_hbm_t *h, uint64_t addr, int64_t bs, size_t n, uint32_t es,
                       uint8_t *out)
{
    if (bs == (int64_t)es) {
        mdl_hbm_read(h, addr, out, n * es);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t a = addr + (uint64_t)((int64_t)i * bs);
        uint64_t page = a >> MDL_HBM_PAGE_BITS, off = a & PAGE_MASK;
        if (off + es <= MDL_HBM_PAGE_SIZE) {
            if (h->pages[page])
                memcpy(out + i * es, h->pages[page] + off, es);
            else
                memset(out + i * es, 0, es);
        } else {
            mdl_hbm_read(h, a, out + i * es, es); /* an element straddling two pages */
        }
    }
}

static int hbm_scatter(mdl_hbm_t *h, uint64_t addr, int64_t bs, size_t n, uint32_t es,
                       const uint8_t *in)
{
    if (bs == (int64_t)es)
        return mdl_hbm_write(h, addr, in, n * es);
    for (size_t i = 0; i < n; i++) {
        uint64_t a = addr + (uint64_t)((int64_t)i * bs);
        uint64_t off = a & PAGE_MASK;
        if (off + es <= MDL_HBM_PAGE_SIZE) {
            uint8_t *page = hbm_page_for_write(h, a);
            if (!page)
                return -1;
            memcpy(page + off, in + i * es, es);
        } else if (mdl_hbm_write(h, a, in + i * es, es)) {
            return -1;
        }
    }
    return 0;
}

/*
 * Source bytes of a run of n elements (n * es <= STAGE_BYTES): a pointer straight into memory
 * when the run is contiguous and resident, else the run gathered into stage. *zero is set when
 * the run lies in one HBM page never written (all bytes read as zero).
 */
static const uint8_t *run_source(const plan_t *pl, uint64_t addr, int64_t bs, size_t n,
                                 uint8_t *stage, int *zero)
{
    *zero = 0;
    if (pl->base) {
        if (bs == (int64_t)pl->es)
            return pl->base + addr;
        gather_bytes(pl->base + addr, bs, n, pl->es, stage);
        return stage;
    }
    const mdl_hbm_t *h = pl->hbm;
    if (bs == (int64_t)pl->es) {
        uint64_t off = addr & PAGE_MASK;
        if (off + n * pl->es <= MDL_HBM_PAGE_SIZE) {
            const uint8_t *page = h->pages[addr >> MDL_HBM_PAGE_BITS];
            if (!page) {
                *zero = 1;
                return NULL;
            }
            return page + off;
        }
    }
    hbm_gather(h, addr, bs, n, pl->es, stage);
    return stage;
}

/*
 * Destination of a run: a pointer straight into memory when contiguous (allocating the HBM
 * page), else stage, in which case *staged is set and the caller calls run_commit afterwards.
 * NULL when out of memory.
 */
static uint8_t *run_dest(const plan_t *pl, uint64_t addr, int64_t bs, size_t n, uint8_t *stage,
                         int *staged)
{
    *staged = 0;
    if (bs == (int64_t)pl->es) {
        if (pl->base)
            return pl->base + addr;
        uint64_t off = addr & PAGE_MASK;
        if (off + n * pl->es <= MDL_HBM_PAGE_SIZE) {
            uint8_t *page = hbm_page_for_write(pl->hbm, addr);
            return page ? page + off : NULL;
        }
    }
    *staged = 1;
    return stage;
}

static int run_commit(const plan_t *pl, uint64_t addr, int64_t bs, size_t n, const uint8_t *stage)
{
    if (pl->base) {
        scatter_bytes(pl->base + addr, bs, n, pl->es, stage);
        return 0;
    }
    return hbm_scatter(pl->hbm, addr, bs, n, pl->es, stage);
}

/* ---- Typed runs ---------------------------------------------------------------------------------
 */

typedef struct io_ctx {
    float *f;   /* f32 in/out, advancing */
    int64_t *i; /* i64 in/out, advancing */
    uint8_t *b; /* raw bytes in/out, advancing */
    mdl_rounding_t mode;
    mdl_rng_t *rng;
} io_ctx_t;

static int run_read_f32(void *c, const plan_t *pl, uint64_t addr, int64_t bs, size_t n)
{
    io_ctx_t *io = c;
    uint8_t stage[STAGE_BYTES];
    const size_t chunk = STAGE_BYTES / pl->es;
    while (n) {
        size_t k = n < chunk ? n : chunk;
        int zero;
        const uint8_t *src = run_source(pl, addr, bs, k, stage, &zero);
        if (zero)
            memset(io->f, 0, k * sizeof *io->f); /* all-zero bytes are 0.0 in every type */
        else
            mdl_load_f32_n(pl->dtype, src, io->f, k);
        io->f += k;
        addr += (uint64_t)((int64_t)k * bs);
        n -= k;
    }
    return 0;
}

static int run_write_f32(void *c, const plan_t *pl, uint64_t addr, int64_t bs, size_t n)
{
    io_ctx_t *io = c;
    uint8_t stage[STAGE_BYTES];
    const size_t chunk = STAGE_BYTES / pl->es;
    while (n) {
        size_t k = n < chunk ? n : chunk;
        int staged;
        uint8_t *dst = run_dest(pl, addr, bs, k, stage, &staged);
        if (!dst)
            return -1;
        mdl_store_f32_n(pl->dtype, dst, io->f, k, io->mode, io->rng);
        if (staged && run_commit(pl, addr, bs, k, stage))
            return -1;
        io->f += k;
        addr += (uint64_t)((int64_t)k * bs);
        n -= k;
    }
    return 0;
}

static int run_read_i64(void *c, const plan_t *pl, uint64_t addr, int64_t bs, size_t n)
{
    io_ctx_t *io = c;
    uint8_t stage[STAGE_BYTES];
    const size_t chunk = STAGE_BYTES / pl->es;
    while (n) {
        size_t k = n < chunk ? n : chunk;
        int zero;
        const uint8_t *src = run_source(pl, addr, bs, k, stage, &zero);
        if (zero)
            memset(io->i, 0, k * sizeof *io->i);
        else
            for (size_t j = 0; j < k; j++)
                io->i[j] = mdl_load_i64(pl->dtype, src + j * pl->es);
        io->i += k;
        addr += (uint64_t)((int64_t)k * bs);
        n -= k;
    }
    return 0;
}

static int run_write_i64(void *c, const plan_t *pl, uint64_t addr, int64_t bs, size_t n)
{
    io_ctx_t *io = c;
    uint8_t stage[STAGE_BYTES];
    const size_t chunk = STAGE_BYTES / pl->es;
    while (n) {
        size_t k = n < chunk ? n : chunk;
        int staged;
        uint8_t *dst = run_dest(pl, addr, bs, k, stage, &staged);
        if (!dst)
            return -1;
        for (size_t j = 0; j < k; j++)
            mdl_store_i64(pl->dtype, dst + j * pl->es, io->i[j]);
        if (staged && run_commit(pl, addr, bs, k, stage))
            return -1;
        io->i += k;
        addr += (uint64_t)((int64_t)k * bs);
        n -= k;
    }
    return 0;
}

static int run_read_bytes(void *c, const plan_t *pl, uint64_t addr, int64_t bs, size_t n)
{
    io_ctx_t *io = c;
    if (pl->base)
        gather_bytes(pl->base + addr, bs, n, pl->es, io->b);
    else
        hbm_gather(pl->hbm, addr, bs, n, pl->es, io->b);
    io->b += n * pl->es;
    return 0;
}

static int run_write_bytes(void *c, const plan_t *pl, uint64_t addr, int64_t bs, size_t n)
{
    io_ctx_t *io = c;
    if (run_commit(pl, addr, bs, n, io->b))
        return -1;
    io->b += n * pl->es;
    return 0;
}

/* ---- Watches -------------------------------------------------------------------------------- */

static mdl_onchip_t *onchip_for_write(const mdl_mem_t *m, unsigned space)
{
    return space == ISA_SPACE_SBUF ? m->sbuf : space == ISA_SPACE_PSUM ? m->psum : NULL;
}

void mdl_view_watch(const mdl_mem_t *m, const isa_view_t *v, unsigned slot)
{
    mdl_onchip_t *o = onchip_for_write(m, v->space);
    int64_t lo, hi;
    if (!o || slot >= MDL_ONCHIP_WATCHES || view_span(v, &lo, &hi))
        return;
    mdl_onchip_watch_t *w = &o->watch[slot];
    if (w->live)
        o->nlive--;
    w->p0 = v->pstart;
    w->p1 = (uint32_t)v->pstart + v->pcount;
    w->lo = (int64_t)v->offset + lo;
    w->hi = (int64_t)v->offset + hi;
    w->live = 1;
    o->nlive++;
}

int mdl_view_watch_live(const mdl_mem_t *m, unsigned space, unsigned slot)
{
    const mdl_onchip_t *o = onchip_for_write(m, space);
    return o && slot < MDL_ONCHIP_WATCHES && o->watch[slot].live;
}

/* A write to v is about to happen: end every watch it overlaps. A view whose span cannot be
 * computed ends them all (it is refused elsewhere; this only has to stay safe). */
static void note_write(const mdl_mem_t *m, const isa_view_t *v)
{
    mdl_onchip_t *o = onchip_for_write(m, v->space);
    if (!o || !o->nlive)
        return;
    int64_t lo, hi;
    const int whole = view_span(v, &lo, &hi) != 0;
    const uint32_t p0 = v->pstart, p1 = (uint32_t)v->pstart + v->pcount;
    for (unsigned i = 0; i < MDL_ONCHIP_WATCHES; i++) {
        mdl_onchip_watch_t *w = &o->watch[i];
        if (!w->live)
            continue;
        if (!whole && (p1 <= w->p0 || w->p1 <= p0 || (int64_t)v->offset + hi <= w->lo ||
                       w->hi <= (int64_t)v->offset + lo))
            continue;
        w->live = 0;
        o->nlive--;
    }
}

/* ---- Public view access ------------------------------------------------------------------------
 */

void mdl_view_read_f32(const mdl_mem_t *m, const isa_view_t *v, float *out)
{
    mdl_view_read_f32_range(m, v, 0, isa_view_elems(v), out);
}

int mdl_view_write_f32(mdl_mem_t *m, const isa_view_t *v, const float *in, mdl_rounding_t mode,
                       mdl_rng_t *rng)
{
    return mdl_view_write_f32_range(m, v, 0, isa_view_elems(v), in, mode, rng);
}

void mdl_view_read_f32_range(const mdl_mem_t *m, const isa_view_t *v, uint64_t first, uint64_t n,
                             float *out)
{
    plan_t pl;
    plan_make(m, v, &pl);
    plan_reading(&pl);
    io_ctx_t io = {.f = out};
    plan_walk(&pl, first, n, run_read_f32, &io);
}

int mdl_view_write_f32_range(mdl_mem_t *m, const isa_view_t *v, uint64_t first, uint64_t n,
                             const float *in, mdl_rounding_t mode, mdl_rng_t *rng)
{
    plan_t pl;
    plan_make(m, v, &pl);
    note_write(m, v);
    io_ctx_t io = {.f = (float *)(uintptr_t)in, .mode = mode, .rng = rng};
    return plan_walk(&pl, first, n, run_write_f32, &io);
}

void mdl_view_read_i64(const mdl_mem_t *m, const isa_view_t *v, int64_t *out)
{
    plan_t pl;
    plan_make(m, v, &pl);
    plan_reading(&pl);
    io_ctx_t io = {.i = out};
    plan_walk(&pl, 0, pl.total, run_read_i64, &io);
}

int mdl_view_write_i64(mdl_mem_t *m, const isa_view_t *v, const int64_t *in)
{
    plan_t pl;
    plan_make(m, v, &pl);
    note_write(m, v);
    io_ctx_t io = {.i = (int64_t *)(uintptr_t)in};
    return plan_walk(&pl, 0, pl.total, run_write_i64, &io);
}

void mdl_view_read_bytes_range(const mdl_mem_t *m, const isa_view_t *v, uint64_t first, uint64_t n,
                               void *out)
{
    plan_t pl;
    plan_make(m, v, &pl);
    plan_reading(&pl);
    io_ctx_t io = {.b = out};
    plan_walk(&pl, first, n, run_read_bytes, &io);
}

int mdl_view_write_bytes_range(mdl_mem_t *m, const isa_view_t *v, uint64_t first, uint64_t n,
                               const void *in)
{
    plan_t pl;
    plan_make(m, v, &pl);
    note_write(m, v);
    io_ctx_t io = {.b = (uint8_t *)(uintptr_t)in};
    return plan_walk(&pl, first, n, run_write_bytes, &io);
}

typedef struct copy_ctx {
    const plan_t *src;
    uint64_t pos; /* next element of src */
} copy_ctx_t;

/* One run of the destination: its bytes read from src into place (staged only when the run
 * is strided, or an element straddles two HBM pages). */
static int run_copy(void *c, const plan_t *pl, uint64_t addr, int64_t bs, size_t n)
{
    copy_ctx_t *cc = c;
    uint8_t stage[STAGE_BYTES];
    while (n) {
        size_t k = n;
        if (!pl->base && bs == (int64_t)pl->es) {
            const uint64_t fit = (MDL_HBM_PAGE_SIZE - (addr & PAGE_MASK)) / pl->es;
            if (fit && fit < k)
                k = (size_t)fit; /* up to the page's end, in place */
        }
        int staged;
        uint8_t *dst = run_dest(pl, addr, bs, k, stage, &staged);
        if (staged && k > STAGE_BYTES / pl->es) {
            k = STAGE_BYTES / pl->es;
            dst = run_dest(pl, addr, bs, k, stage, &staged);
        }
        if (!dst)
            return -1;
        io_ctx_t io = {.b = dst};
        plan_walk(cc->src, cc->pos, k, run_read_bytes, &io);
        if (staged && run_commit(pl, addr, bs, k, stage))
            return -1;
        cc->pos += k;
        addr += (uint64_t)((int64_t)k * bs);
        n -= k;
    }
    return 0;
}

int mdl_view_copy_bytes(mdl_mem_t *m, const isa_view_t *dst, const isa_view_t *src)
{
    plan_t pd, ps;
    plan_make(m, dst, &pd);
    plan_make(m, src, &ps);
    plan_reading(&ps);
    note_write(m, dst);
    copy_ctx_t cc = {&ps, 0};
    return plan_walk(&pd, 0, pd.total, run_copy, &cc);
}

/* Adapter from the internal run callback to the public one. */
typedef struct runs_ctx {
    mdl_run_fn fn;
    void *ctx;
} runs_ctx_t;

static int run_public(void *c, const plan_t *pl, uint64_t addr, int64_t bs, size_t n)
{
    runs_ctx_t *r = c;
    return r->fn(r->ctx, addr, bs, n, pl->es);
}

int mdl_view_runs(const mdl_mem_t *m, const isa_view_t *v, mdl_run_fn fn, void *ctx)
{
    plan_t pl;
    plan_make(m, v, &pl);
    runs_ctx_t r = {fn, ctx};
    return plan_walk(&pl, 0, pl.total, run_public, &r);
}
