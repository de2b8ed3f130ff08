/*
 * records.c -- the tables behind trace.h: formats, track kinds, field descriptors for every
 * argument struct (expanded from the X-macros, so a field added there reaches both writers,
 * the reader and the report without another edit).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "trace_internal.h"

/* ---- formats ---------------------------------------------------------------------------------- */

static const char *const format_ext[] = {
#define XX(id, ext) ext,
    TRC_FORMAT_MAP(XX)
#undef XX
};

trc_format_t trc_format_for_path(const char *path)
{
    size_t n = strlen(path);
    for (int f = 0; f < TRC_FORMAT_COUNT; f++) {
        size_t e = strlen(format_ext[f]);
        if (n > e && strcmp(path + n - e, format_ext[f]) == 0)
            return (trc_format_t)f;
    }
    return TRC_FORMAT_COUNT;
}

const char *trc_format_ext(trc_format_t f)
{
    return f < TRC_FORMAT_COUNT ? format_ext[f] : "";
}

/* ---- tracks ----------------------------------------------------------------------------------- */

static const struct {
    const char *name;
    uint32_t first, n;
} track_kinds[] = {
#define XX(id, name, first, n) {name, first, n},
    TRC_TRACK_KIND_MAP(XX)
#undef XX
};

uint32_t trc_tid(uint32_t pid, trc_track_kind_t kind, uint32_t n)
{
    return pid * TRC_TIDS_PER_PID + track_kinds[kind].first + n;
}

trc_track_kind_t trc_track_kind_of_tid(uint32_t tid, uint32_t *n)
{
    tid %= TRC_TIDS_PER_PID;
    for (int k = 0; k < TRC_TRACK_KIND_COUNT; k++)
        if (tid >= track_kinds[k].first && tid < track_kinds[k].first + track_kinds[k].n) {
            if (n)
                *n = tid - track_kinds[k].first;
            return (trc_track_kind_t)k;
        }
    return TRC_TRACK_KIND_COUNT;
}

const char *trc_track_kind_name(trc_track_kind_t k)
{
    return k < TRC_TRACK_KIND_COUNT ? track_kinds[k].name : "track";
}

/* ---- fields ----------------------------------------------------------------------------------- */

#define FIELD_DESC(STRUCT, member, key, type, always)                                          \
    {key, TRC_FT_##type, always, (uint16_t)offsetof(STRUCT, member), (uint16_t)(sizeof(key) - 1)},

#define RUN_DESC(member, key, type, always) FIELD_DESC(trc_run_t, member, key, type, always)
static const trc_field_t run_fields[] = {TRC_RUN_FIELDS(RUN_DESC)};
#undef RUN_DESC

#define XX(ID, member_, cat, FIELDS)                                                           \
    static const trc_field_t member_##_fields[] = {FIELDS(member_##_DESC)};
#define instr_DESC(member, key, type, always) FIELD_DESC(trc_instr_args_t, member, key, type, always)
#define dma_DESC(member, key, type, always) FIELD_DESC(trc_dma_args_t, member, key, type, always)
#define link_DESC(member, key, type, always) FIELD_DESC(trc_link_args_t, member, key, type, always)
#define collective_DESC(member, key, type, always) FIELD_DESC(trc_collective_args_t, member, key, type, always)
TRC_SLICE_KIND_MAP(XX)
#undef XX

static const struct {
    const char *cat;
    const trc_field_t *fields;
    unsigned n;
} slice_kinds[] = {
#define XX(ID, member, cat, FIELDS)                                                            \
    {cat, member##_fields, (unsigned)(sizeof member##_fields / sizeof member##_fields[0])},
    TRC_SLICE_KIND_MAP(XX)
#undef XX
};

const trc_field_t *trc_run_fields(unsigned *n)
{
    *n = (unsigned)(sizeof run_fields / sizeof run_fields[0]);
    return run_fields;
}

const trc_field_t *trc_slice_fields(trc_slice_kind_t k, unsigned *n)
{
    *n = slice_kinds[k].n;
    return slice_kinds[k].fields;
}

const char *trc_slice_category(trc_slice_kind_t k)
{
    return k < TRC_SLICE_KIND_COUNT ? slice_kinds[k].cat : "";
}

trc_slice_kind_t trc_slice_kind_lookup(const char *cat, size_t len)
{
    for (int k = 0; k < TRC_SLICE_KIND_COUNT; k++)
        if (strlen(slice_kinds[k].cat) == len && memcmp(slice_kinds[k].cat, cat, len) == 0)
            return (trc_slice_kind_t)k;
    return TRC_SLICE_KIND_COUNT;
}

static const char *const record_names[] = {
#define XX(ID, member, desc) #member,
    TRC_RECORD_MAP(XX)
#undef XX
};

const char *trc_record_kind_name(trc_kind_t k)
{
    return k < TRC_REC_COUNT ? record_names[k] : "?";
}

/* ---- DMA breakdown ---------------------------------------------------------------------------- */

size_t trc_dma_cost_text(const trc_dma_args_t *a, uint64_t dur_ps, char *buf, size_t n)
{
    static const struct {
        size_t offset;
        const char *name;
    } limits[] = {
#define XX(member, name) {offsetof(trc_dma_args_t, member), name},
        TRC_DMA_LIMIT_MAP(XX)
#undef XX
    };
    /* the rate of its data flow: the larger side of a converting transfer, the one its cap
     * and shares are in (docs/cost-model.md 9.3) */
    uint64_t moved = trc_dma_src_bytes(a) > a->bytes ? trc_dma_src_bytes(a) : a->bytes;
    double gbps = dur_ps ? (double)moved / (double)dur_ps * 1000.0 : 0.0;
    int at = snprintf(buf, n,
                      "fixed %.3f ns, queue wait %.3f ns, %llu pieces x %.0f B at efficiency "
                      "%.3f, data %.3f ns at %.3f GB/s (own cap %.3f GB/s: %.0f engines; got "
                      "%.1f%% of the DMA engines, %.1f%% of HBM); rate set by:",
                      (double)a->fixed / 1e3, (double)a->queue_wait / 1e3,
                      (unsigned long long)a->pieces, a->piece_bytes, a->efficiency,
                      (double)dur_ps / 1e3, gbps, a->cap_gbps, a->engines, a->dma_share,
                      a->hbm_share);
    size_t len = at > 0 ? (size_t)at : 0;
    int any = 0;
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        uint64_t ps;
        memcpy(&ps, (const unsigned char *)a + limits[l].offset, sizeof ps);
        if (!ps)
            continue;
        at = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, "%s %s %.0f%%",
                      any ? "," : "", limits[l].name,
                      dur_ps ? 100.0 * (double)ps / (double)dur_ps : 0.0);
        len += at > 0 ? (size_t)at : 0;
        any = 1;
    }
    if (!any) {
        at = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, " -");
        len += at > 0 ? (size_t)at : 0;
    }
    return len;
}

/* ---- arguments a .pftrace leaves out (trace_internal.h) --------------------------------------- */

#define BIT(x) (1ull << (x))

/* Is name exactly "SRC->DST", src holding no "->" and both shorter than TRC_PF_SIDE_MAX?
 * One pass over the three strings (every transfer asks). */
static int name_is_sides(const char *name, const char *src, const char *dst)
{
    if (!name || !src || !dst)
        return 0;
    size_t a = 0;
    for (; src[a]; a++)
        if (a + 1 >= TRC_PF_SIDE_MAX || name[a] != src[a] || (src[a] == '-' && src[a + 1] == '>'))
            return 0;
    if (name[a] != '-' || name[a + 1] != '>')
        return 0;
    const char *n = name + a + 2;
    size_t b = 0;
    for (; dst[b]; b++)
        if (b + 1 >= TRC_PF_SIDE_MAX || n[b] != dst[b])
            return 0;
    return n[b] == '\0';
}

uint64_t trc_pf_implied(const trc_slice_t *s)
{
    uint64_t m = 0;
    if (s->kind == TRC_SLICE_INSTR) {
        const trc_instr_args_t *a = &s->a.instr;
        if (a->ii == s->dur_ps)
            m |= BIT(TRC_FI_INSTR_ii);
        if (a->hw_flops == a->flops)
            m |= BIT(TRC_FI_INSTR_hw_flops);
        if (a->wait == a->wait_semaphore + a->wait_port + a->wait_interlock + a->wait_collective)
            m |= BIT(TRC_FI_INSTR_wait);
    } else if (s->kind == TRC_SLICE_DMA) {
        const trc_dma_args_t *a = &s->a.dma;
        if (name_is_sides(s->name, a->src, a->dst))
            m |= BIT(TRC_FI_DMA_src) | BIT(TRC_FI_DMA_dst);
        if (a->queued == a->fixed + a->queue_wait)
            m |= BIT(TRC_FI_DMA_queued);
    }
    return m;
}

void trc_pf_restore(trc_slice_t *s, uint64_t present, char side[2][TRC_PF_SIDE_MAX])
{
    if (s->kind == TRC_SLICE_INSTR) {
        trc_instr_args_t *a = &s->a.instr;
        if (!(present & BIT(TRC_FI_INSTR_ii)))
            a->ii = s->dur_ps;
        if (!(present & BIT(TRC_FI_INSTR_hw_flops)))
            a->hw_flops = a->flops;
        if (!(present & BIT(TRC_FI_INSTR_wait)))
            a->wait = a->wait_semaphore + a->wait_port + a->wait_interlock + a->wait_collective;
    } else if (s->kind == TRC_SLICE_DMA) {
        trc_dma_args_t *a = &s->a.dma;
        const char *arrow = s->name ? strstr(s->name, "->") : NULL;
        if (!(present & (BIT(TRC_FI_DMA_src) | BIT(TRC_FI_DMA_dst))) && arrow &&
            (size_t)(arrow - s->name) < TRC_PF_SIDE_MAX && strlen(arrow + 2) < TRC_PF_SIDE_MAX) {
            memcpy(side[0], s->name, (size_t)(arrow - s->name));
            side[0][arrow - s->name] = '\0';
            strcpy(side[1], arrow + 2);
            a->src = side[0];
            a->dst = side[1];
        }
        if (!(present & BIT(TRC_FI_DMA_queued)))
            a->queued = a->fixed + a->queue_wait;
    }
}
