/*
 * reader.c -- opening a trace of either format (gzip is undone transparently by zlib, so a
 * gzipped .pftrace reads too), telling the formats apart by content, and the helpers both
 * readers share: argument fields and flow pairing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

/* A value from a file, rounded to an unsigned count: NaN and negatives give 0, values past
 * the range (Infinity included, which a crafted trace may hold) saturate. Converting such a
 * double to an integer type directly is undefined behaviour. */
static uint64_t double_to_u64(double d)
{
    if (!(d > 0))
        return 0;
    if (d >= 18446744073709549568.0) /* the largest double below 2^64 */
        return UINT64_MAX;
    return (uint64_t)(d + 0.5 >= 18446744073709549568.0 ? d : d + 0.5);
}

static ncsim_status_t read_any(const char *path, trc_record_fn fn, void *ctx, char *err,
                               size_t errlen)
{
    trc_src_t src;
    src.path = path;
    src.gz = gzopen(path, "rb");
    if (!src.gz) {
        snprintf(err, errlen, "cannot open %s: %s", path, errno ? strerror(errno) : "error");
        return NCSIM_IO;
    }
    gzbuffer(src.gz, 1u << 17);
    unsigned char head[4096];
    int n = gzread(src.gz, head, sizeof head);
    if (n < 0) {
        int code;
        snprintf(err, errlen, "%s: %s", path, gzerror(src.gz, &code));
        gzclose(src.gz);
        return NCSIM_IO;
    }
    size_t i = 0;
    while (i < (size_t)n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' ||
                             head[i] == '\t'))
        i++;
    ncsim_status_t st;
    if (n == 0) {
        snprintf(err, errlen, "%s: empty file, not a trace", path);
        st = NCSIM_FORMAT;
    } else if (head[i] == '{' || head[i] == '[') {
        st = trc_read_json(&src, head, (size_t)n, fn, ctx, err, errlen);
    } else if (head[0] == ((PF_TRACE_PACKET << 3) | PB_LEN)) {
        st = trc_read_pftrace(&src, head, (size_t)n, fn, ctx, err, errlen);
    } else {
        snprintf(err, errlen, "%s: neither trace JSON nor a Perfetto protobuf trace", path);
        st = NCSIM_FORMAT;
    }
    gzclose(src.gz);
    return st;
}

/* Between a format's reader and the caller: what the file stores as numbers becomes the
 * text the records promise (a DMA transfer's breakdown). */
typedef struct read_ctx {
    trc_record_fn fn;
    void *ctx;
    unsigned flags;
    char text[1024];
} read_ctx_t;

static int complete_record(void *c, const trc_record_t *r)
{
    read_ctx_t *x = c;
    if (r->kind == TRC_REC_SLICE && r->u.slice.kind == TRC_SLICE_DMA) {
        const trc_dma_args_t *a = &r->u.slice.a.dma;
        if ((!a->cost || !*a->cost) && (a->pieces || a->cap_gbps != 0) &&
            !(x->flags & TRC_READ_NO_DMA_TEXT)) {
            trc_record_t copy = *r;
            trc_dma_cost_text(a, r->u.slice.dur_ps, x->text, sizeof x->text);
            copy.u.slice.a.dma.cost = x->text;
            return x->fn(x->ctx, &copy);
        }
    }
    return x->fn(x->ctx, r);
}

ncsim_status_t trc_read(const char *path, trc_record_fn fn, void *ctx, char *err, size_t errlen)
{
    return trc_read_flags(path, 0, fn, ctx, err, errlen);
}

ncsim_status_t trc_read_flags(const char *path, unsigned flags, trc_record_fn fn, void *ctx,
                              char *err, size_t errlen)
{
    read_ctx_t *rc = malloc(sizeof *rc);
    if (!rc) {
        snprintf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    rc->fn = fn;
    rc->ctx = ctx;
    rc->flags = flags;
    ncsim_status_t st = read_any(path, complete_record, rc, err, errlen);
    free(rc);
    return st;
}

/* ---- fields -------------------------------------------------------------------------------------- */

int trc_get_field(const trc_field_t *f, const void *base, uint64_t *u, double *d, const char **s)
{
    const unsigned char *m = (const unsigned char *)base + f->offset;
    *u = 0;
    *d = 0;
    *s = NULL;
    switch (f->type) {
    case TRC_FT_U64:
    case TRC_FT_PS: memcpy(u, m, sizeof *u); break;
    case TRC_FT_F64: memcpy(d, m, sizeof *d); break;
    default: memcpy(s, m, sizeof *s); break;
    }
    if (!f->always && !*u && *d == 0 && !(*s && **s))
        return 0;
    if (f->type == TRC_FT_STR && !*s)
        *s = "";
    return 1;
}

int trc_set_field(const trc_field_t *f, unsigned nf, void *base, const char *key, size_t keylen,
                  const arg_value_t *v)
{
    for (unsigned i = 0; i < nf; i++) {
        if (f[i].keylen != keylen) {
            /* a real as an integer times 1000 or 10^6: "gbps_x1000" for "gbps" (.pftrace) */
            size_t k = f[i].keylen;
            int e3 = keylen == k + 6 && memcmp(key + k, "_x1000", 6) == 0;
            int e6 = keylen == k + 5 && memcmp(key + k, "_x1e6", 5) == 0;
            if (f[i].type == TRC_FT_F64 && (e3 || e6) && !v->is_text && !v->is_double &&
                memcmp(f[i].key, key, k) == 0) {
                double d = (double)v->u / (e3 ? 1000.0 : 1e6);
                memcpy((unsigned char *)base + f[i].offset, &d, sizeof d);
                return (int)i;
            }
            continue;
        }
        if (memcmp(f[i].key, key, keylen) != 0) {
            /* a time as integer picoseconds: "ii_ps" for the field "ii_ns" (.pftrace) */
            if (f[i].type == TRC_FT_PS && !v->is_text && !v->is_double && keylen > 3 &&
                memcmp(f[i].key, key, keylen - 3) == 0 &&
                memcmp(f[i].key + keylen - 3, "_ns", 3) == 0 &&
                memcmp(key + keylen - 3, "_ps", 3) == 0) {
                memcpy((unsigned char *)base + f[i].offset, &v->u, sizeof v->u);
                return (int)i;
            }
            continue;
        }
        unsigned char *m = (unsigned char *)base + f[i].offset;
        switch (f[i].type) {
        case TRC_FT_U64: {
            uint64_t u = 0;
            if (v->is_text) {
                if (trc_parse_scaled(v->text, v->len, 0, &u))
                    return -1;
            } else {
                u = v->is_double ? double_to_u64(v->d) : v->u;
            }
            memcpy(m, &u, sizeof u);
            return (int)i;
        }
        case TRC_FT_PS: {
            uint64_t u = 0;
            if (v->is_text) {
                if (trc_parse_scaled(v->text, v->len, 3, &u))
                    return -1;
            } else {
                u = v->is_double ? double_to_u64(v->d * 1000.0)
                                 : (v->u > UINT64_MAX / 1000 ? UINT64_MAX : v->u * 1000);
            }
            memcpy(m, &u, sizeof u);
            return (int)i;
        }
        case TRC_FT_F64: {
            double d = v->is_text ? strtod(v->text, NULL) : v->is_double ? v->d : (double)v->u;
            memcpy(m, &d, sizeof d);
            return (int)i;
        }
        default: {
            if (!v->is_text)
                return -1;
            const char *s = v->text;
            memcpy(m, &s, sizeof s);
            return (int)i;
        }
        }
    }
    return -1;
}

/* ---- flow pairing -------------------------------------------------------------------------------- */

static uint64_t flow_hash(uint64_t id, const char *cat)
{
    uint64_t h = 14695981039346656037ull ^ id;
    for (; *cat; cat++)
        h = (h ^ (unsigned char)*cat) * 1099511628211ull;
    return h * 0x9e3779b97f4a7c15ull;
}

static int flowpair_grow(flowpair_t *fp)
{
    size_t cap = fp->cap ? fp->cap * 2 : 256;
    if (fp->n * 2 < fp->cap && fp->cap)
        cap = fp->cap; /* only tombstones to clear */
    flow_end_t *s = calloc(cap, sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < fp->cap; i++)
        if (fp->slots[i].used == 1) {
            size_t j = flow_hash(fp->slots[i].id, fp->slots[i].cat) & (cap - 1);
            while (s[j].used)
                j = (j + 1) & (cap - 1);
            s[j] = fp->slots[i];
        }
    free(fp->slots);
    fp->slots = s;
    fp->cap = cap;
    fp->removed = 0;
    return 0;
}

int flowpair_add(flowpair_t *fp, const flow_end_t *e, trc_flow_t *out)
{
    if ((fp->n + fp->removed + 1) * 4 > fp->cap * 3 && flowpair_grow(fp))
        return -1;
    size_t j = flow_hash(e->id, e->cat) & (fp->cap - 1);
    while (fp->slots[j].used) {
        flow_end_t *o = &fp->slots[j];
        if (o->used == 1 && o->id == e->id && o->is_end != e->is_end &&
            strcmp(o->cat, e->cat) == 0) {
            const flow_end_t *src = e->is_end ? o : e, *dst = e->is_end ? e : o;
            out->id = e->id;
            out->cat = src->label[0] ? src->label : src->cat;
            out->name = src->name;
            out->from_pid = src->pid;
            out->from_tid = src->tid;
            out->from_ts_ps = src->ts_ps;
            out->to_pid = dst->pid;
            out->to_tid = dst->tid;
            out->to_ts_ps = dst->ts_ps;
            o->used = 2; /* strings stay readable until the slot is reused by a later add */
            fp->n--;
            fp->removed++;
            return 1;
        }
        j = (j + 1) & (fp->cap - 1);
    }
    fp->slots[j] = *e;
    fp->slots[j].used = 1;
    fp->n++;
    return 0;
}

void flowpair_free(flowpair_t *fp)
{
    free(fp->slots);
    memset(fp, 0, sizeof *fp);
}
