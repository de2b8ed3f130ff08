/*
 * mem.h -- the memories: per-core SBUF and PSUM, per-chip HBM allocated lazily in pages
 * (a 32 GiB HBM costs host memory only for the pages a run touches), and element access
 * through views.
 *
 * SBUF/PSUM layout: partition-major, byte `offset` of partition p at base[p * bytes + offset].
 * HBM: byte addresses 0 .. size-1; unwritten bytes read as zero.
 */
#ifndef NCSIM_MODELS_MEM_H
#define NCSIM_MODELS_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"
#include "numerics.h"

#define MDL_HBM_PAGE_BITS 20 /* 1 MiB pages */
#define MDL_HBM_PAGE_SIZE (1ull << MDL_HBM_PAGE_BITS)

typedef struct mdl_hbm {
    uint64_t size;
    uint8_t **pages;   /* size / page size entries, NULL until written */
    uint64_t npages;
    uint64_t pages_allocated;
} mdl_hbm_t;

/*
 * A watched region of SBUF or PSUM: partitions [p0, p1) x bytes [lo, hi) of each. `live`
 * stays 1 until a write through this module overlaps it. The functional model uses watches
 * to reuse what it derived from memory (the fp32 widening of a matmul's moving tile) for as
 * long as the bytes are unchanged. Every write to SBUF and PSUM goes through mem.c (the one
 * exception, a matmul accumulating straight into PSUM, never touches a watched SBUF tile).
 */
#define MDL_ONCHIP_WATCHES 4
typedef struct mdl_onchip_watch {
    uint32_t p0, p1;
    int64_t lo, hi;
    uint8_t live;
} mdl_onchip_watch_t;

typedef struct mdl_onchip {
    uint8_t *data;            /* partitions * bytes */
    uint32_t partitions;
    uint64_t bytes;           /* per partition */
    unsigned nlive;           /* live watches (a write checks them only when nonzero) */
    mdl_onchip_watch_t watch[MDL_ONCHIP_WATCHES];
} mdl_onchip_t;

int mdl_hbm_init(mdl_hbm_t *h, uint64_t size);
void mdl_hbm_free(mdl_hbm_t *h);
/* Copy bytes in or out (out of range is the caller's bug: checked by mdl_view_check). */
void mdl_hbm_read(const mdl_hbm_t *h, uint64_t addr, void *dst, size_t n);
int mdl_hbm_write(mdl_hbm_t *h, uint64_t addr, const void *src, size_t n); /* -1 on OOM */

int mdl_onchip_init(mdl_onchip_t *m, uint32_t partitions, uint64_t bytes);

/* n zeroed bytes straight from mmap, their pages given out as first touched, whatever glibc's
 * adaptive mmap threshold has become (calloc then memsets large blocks): for large tables a
 * simulation may use little of. Freed with mdl_zeroed_free and the same n; NULL on failure. */
void *mdl_zeroed_alloc(size_t n);
void mdl_zeroed_free(void *p, size_t n);
void mdl_onchip_free(mdl_onchip_t *m);

/* The memories one view may refer to: the issuing core's SBUF and PSUM, its chip's HBM. */
typedef struct mdl_mem {
    mdl_onchip_t *sbuf;
    mdl_onchip_t *psum;
    mdl_hbm_t *hbm;
} mdl_mem_t;

/*
 * Check that every element of v lies inside its memory. On failure writes a message naming
 * the space and the offending byte/partition range into err and returns -1.
 */
int mdl_view_check(const mdl_mem_t *m, const isa_view_t *v, char *err, size_t errlen);

/* Watch the bytes of v (SBUF or PSUM) in watch slot `slot` (< MDL_ONCHIP_WATCHES), replacing
 * what that slot watched. */
void mdl_view_watch(const mdl_mem_t *m, const isa_view_t *v, unsigned slot);
/* 1 while nothing has written the bytes watched in `slot` since mdl_view_watch. */
int mdl_view_watch_live(const mdl_mem_t *m, unsigned space, unsigned slot);

/* Read all elements of v, row-major over (partition, free dims), widened to fp32. */
void mdl_view_read_f32(const mdl_mem_t *m, const isa_view_t *v, float *out);
/* Write n = isa_view_elems(v) values, converting to v's dtype. Returns -1 on OOM (HBM). */
int mdl_view_write_f32(mdl_mem_t *m, const isa_view_t *v, const float *in, mdl_rounding_t mode,
                       mdl_rng_t *rng);
/* Integer versions (for bitwise ops, iota, find_index8). */
void mdl_view_read_i64(const mdl_mem_t *m, const isa_view_t *v, int64_t *out);
int mdl_view_write_i64(mdl_mem_t *m, const isa_view_t *v, const int64_t *in);

/* Elements [first, first + n) of the row-major order only (DMA moves long views in chunks). */
void mdl_view_read_f32_range(const mdl_mem_t *m, const isa_view_t *v, uint64_t first, uint64_t n,
                             float *out);
int mdl_view_write_f32_range(mdl_mem_t *m, const isa_view_t *v, uint64_t first, uint64_t n,
                             const float *in, mdl_rounding_t mode, mdl_rng_t *rng);
/* Raw element bytes, packed (n * element size bytes), no conversion: same-type copies. */
void mdl_view_read_bytes_range(const mdl_mem_t *m, const isa_view_t *v, uint64_t first,
                               uint64_t n, void *out);
int mdl_view_write_bytes_range(mdl_mem_t *m, const isa_view_t *v, uint64_t first, uint64_t n,
                               const void *in);
/* Copy the elements of src into dst (same type, same element count, no conversion) without
 * a staging copy: each run of dst is read straight from src. For views in different spaces
 * only (an HBM <-> SBUF DMA), which cannot overlap. Nonzero when out of memory. */
int mdl_view_copy_bytes(mdl_mem_t *m, const isa_view_t *dst, const isa_view_t *src);

/*
 * Visit the elements of a checked view in row-major order as runs: n elements of elem_bytes
 * starting at byte address addr, byte_stride apart. For SBUF/PSUM, addr is flat:
 * partition * bytes-per-partition + offset. Stops and returns -1 when fn returns nonzero.
 */
typedef int (*mdl_run_fn)(void *ctx, uint64_t addr, int64_t byte_stride, uint64_t n,
                          uint32_t elem_bytes);
int mdl_view_runs(const mdl_mem_t *m, const isa_view_t *v, mdl_run_fn fn, void *ctx);

#endif
