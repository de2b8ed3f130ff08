/*
 * common.c -- buffered (optionally gzipped) output, exact number formatting and parsing, and
 * the protobuf wire format, shared by the writers and readers.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/igzip_lib.h>

#include "isa.h"

#include "trace_internal.h"

/* ---- buffered output ----------------------------------------------------------------------------- */

/*
 * gzip by ISA-L's igzip at its level 2: 4.5x the speed of zlib's deflate at level 1 (what we
 * used before) on our JSON traces, and a smaller file (12.4 against 13.3 MB for 108 MB of
 * trace; igzip's level 1 is as fast and 3 % larger), a standard one-member gzip file that
 * zlib, gzip and Perfetto read. ISA-L keeps its hash tables in level_buf, allocated once per
 * trace.
 */
#define GZ_OUT_BYTES (1u << 18)

struct trc_gzip {
    struct isal_zstream z;
    uint8_t *level_buf;
    uint8_t out[GZ_OUT_BYTES];
};

static struct trc_gzip *gzip_new(void)
{
    struct trc_gzip *g = malloc(sizeof *g);
    if (!g)
        return NULL;
    isal_deflate_init(&g->z);
    g->level_buf = malloc(ISAL_DEF_LVL2_DEFAULT);
    if (!g->level_buf) {
        free(g);
        return NULL;
    }
    g->z.level = 2;
    g->z.level_buf = g->level_buf;
    g->z.level_buf_size = ISAL_DEF_LVL2_DEFAULT;
    g->z.gzip_flag = IGZIP_GZIP;
    g->z.flush = NO_FLUSH;
    return g;
}

static void gzip_free(struct trc_gzip *g)
{
    if (g)
        free(g->level_buf);
    free(g);
}

/* Compress n bytes into f (the last call with end = 1, n possibly 0); 0 on success. */
static int gzip_put(struct trc_gzip *g, FILE *f, const unsigned char *p, size_t n, int end)
{
    g->z.next_in = (uint8_t *)(uintptr_t)p;
    g->z.avail_in = (uint32_t)n; /* n <= TRC_OUT_BUFSZ */
    g->z.end_of_stream = (uint16_t)end;
    do {
        g->z.next_out = g->out;
        g->z.avail_out = GZ_OUT_BYTES;
        int rc = isal_deflate(&g->z);
        isa_avx_clean(); /* igzip's AVX-512 code leaves the upper halves set (isa.h) */
        if (rc != COMP_OK)
            return -1;
        size_t k = GZ_OUT_BYTES - g->z.avail_out;
        if (k && fwrite(g->out, 1, k, f) != k)
            return -1;
    } while (g->z.avail_in || (end && g->z.internal_state.state != ZSTATE_END));
    return 0;
}

/* Write one buffer to the file; 0 on success, else a message in err. */
static int out_put(trc_out_t *o, const unsigned char *p, size_t n, char *err, size_t errlen)
{
    int ok;
    errno = 0;
    if (o->gz)
        ok = gzip_put(o->gz, o->f, p, n, 0) == 0;
    else
        ok = fwrite(p, 1, n, o->f) == n;
    if (!ok)
        snprintf(err, errlen, "write error: %s", errno ? strerror(errno) : "gzip failed");
    return ok ? 0 : -1;
}

static void *writer_thread(void *arg)
{
    trc_out_t *o = arg;
    char err[256] = "";
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (!o->nfull && !o->closing)
            pthread_cond_wait(&o->have_full, &o->mu);
        if (!o->nfull)
            break;
        unsigned char *b = o->full[o->full_head];
        size_t n = o->full_len[o->full_head];
        o->full_head = (o->full_head + 1) % TRC_OUT_NBUF;
        o->nfull--;
        int failed = o->thread_failed;
        pthread_mutex_unlock(&o->mu);
        int rc = failed ? 0 : out_put(o, b, n, err, sizeof err);
        pthread_mutex_lock(&o->mu);
        if (rc && !o->thread_failed) {
            o->thread_failed = 1;
            snprintf(o->thread_err, sizeof o->thread_err, "%s", err);
        }
        o->free_bufs[o->nfree++] = b;
        pthread_cond_signal(&o->have_free);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

int trc_out_open(trc_out_t *o, const char *path, int gzip)
{
    memset(o, 0, sizeof *o);
    /* through a temporary beside the target, renamed into place by trc_out_close only when
     * everything was written: a full disk, a failed run or a signal leaves no partial trace
     * under the requested name (isa/file.h) */
    if (isa_file_begin(&o->file, path)) {
        snprintf(o->err, sizeof o->err, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    o->f = o->file.f;
    if (gzip && !(o->gz = gzip_new())) {
        snprintf(o->err, sizeof o->err, "out of memory");
        trc_out_close(o, 0);
        o->failed = 1;
        return -1;
    }
    o->buf = malloc(TRC_OUT_BUFSZ);
    for (unsigned i = 0; o->buf && i + 1 < TRC_OUT_NBUF; i++) {
        unsigned char *b = malloc(TRC_OUT_BUFSZ);
        if (!b)
            break;
        o->free_bufs[o->nfree++] = b;
    }
    if (!o->buf) {
        snprintf(o->err, sizeof o->err, "out of memory");
        trc_out_close(o, 0);
        o->failed = 1;
        return -1;
    }
    if (o->nfree && pthread_mutex_init(&o->mu, NULL) == 0) {
        if (pthread_cond_init(&o->have_full, NULL) == 0) {
            if (pthread_cond_init(&o->have_free, NULL) == 0) {
                if (pthread_create(&o->thread, NULL, writer_thread, o) == 0) {
                    o->threaded = 1;
                    return 0;
                }
                pthread_cond_destroy(&o->have_free);
            }
            pthread_cond_destroy(&o->have_full);
        }
        pthread_mutex_destroy(&o->mu);
    }
    return 0; /* no thread: write inline */
}

void trc_out_flush(trc_out_t *o)
{
    if (!o->n)
        return;
    if (!o->threaded) {
        if (!o->failed && out_put(o, o->buf, o->n, o->err, sizeof o->err))
            o->failed = 1;
        o->n = 0;
        return;
    }
    pthread_mutex_lock(&o->mu);
    unsigned tail = (o->full_head + o->nfull) % TRC_OUT_NBUF;
    o->full[tail] = o->buf;
    o->full_len[tail] = o->n;
    o->nfull++;
    pthread_cond_signal(&o->have_full);
    while (!o->nfree)
        pthread_cond_wait(&o->have_free, &o->mu);
    o->buf = o->free_bufs[--o->nfree];
    if (o->thread_failed && !o->failed) {
        o->failed = 1;
        snprintf(o->err, sizeof o->err, "%s", o->thread_err);
    }
    pthread_mutex_unlock(&o->mu);
    o->n = 0;
}

void trc_out_write(trc_out_t *o, const void *data, size_t n)
{
    const unsigned char *d = data;
    while (n) {
        if (o->n == TRC_OUT_BUFSZ)
            trc_out_flush(o);
        size_t k = TRC_OUT_BUFSZ - o->n;
        if (k > n)
            k = n;
        memcpy(o->buf + o->n, d, k);
        o->n += k;
        o->total += k;
        d += k;
        n -= k;
    }
}

int trc_out_close(trc_out_t *o, int keep)
{
    if (o->buf)
        trc_out_flush(o);
    if (o->threaded) {
        pthread_mutex_lock(&o->mu);
        o->closing = 1;
        pthread_cond_signal(&o->have_full);
        pthread_mutex_unlock(&o->mu);
        pthread_join(o->thread, NULL);
        if (o->thread_failed && !o->failed) {
            o->failed = 1;
            snprintf(o->err, sizeof o->err, "%s", o->thread_err);
        }
        pthread_cond_destroy(&o->have_full);
        pthread_cond_destroy(&o->have_free);
        pthread_mutex_destroy(&o->mu);
        o->threaded = 0;
    }
    errno = 0;
    if (o->gz && o->f && !o->failed && gzip_put(o->gz, o->f, NULL, 0, 1)) {
        o->failed = 1;
        snprintf(o->err, sizeof o->err, "cannot finish the gzip stream: %s",
                 errno ? strerror(errno) : "gzip failed");
    }
    if (o->f && isa_file_commit(&o->file, keep && !o->failed) != 0 && keep && !o->failed) {
        o->failed = 1;
        snprintf(o->err, sizeof o->err, "write error: %s", strerror(errno));
    }
    gzip_free(o->gz);
    o->gz = NULL;
    o->f = NULL;
    free(o->buf);
    o->buf = NULL;
    for (unsigned i = 0; i < o->nfree; i++)
        free(o->free_bufs[i]);
    o->nfree = 0;
    return o->failed ? -1 : 0;
}

/* ---- numbers ------------------------------------------------------------------------------------- */

/* "00" .. "99": two digits per division */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

static const uint64_t pow10_table[] = {1ull,
                                       10ull,
                                       100ull,
                                       1000ull,
                                       10000ull,
                                       100000ull,
                                       1000000ull,
                                       10000000ull,
                                       100000000ull,
                                       1000000000ull,
                                       10000000000ull,
                                       100000000000ull,
                                       1000000000000ull,
                                       10000000000000ull,
                                       100000000000000ull,
                                       1000000000000000ull,
                                       10000000000000000ull,
                                       100000000000000000ull,
                                       1000000000000000000ull,
                                       10000000000000000000ull};

static unsigned count_digits32(uint32_t v)
{
    if (v < 100000)
        return v < 100 ? (v < 10 ? 1 : 2) : v < 10000 ? (v < 1000 ? 3 : 4) : 5;
    return v < 10000000 ? (v < 1000000 ? 6 : 7) : v < 1000000000 ? (v < 100000000 ? 8 : 9) : 10;
}

static unsigned count_digits(uint64_t v)
{
    if (v <= UINT32_MAX)
        return count_digits32((uint32_t)v);
    unsigned n = 10;
    while (n < 20 && v >= pow10_table[n])
        n++;
    return n;
}

/* Exactly `n` digits of v (the leading ones of a larger number are dropped); 32-bit
 * arithmetic once the rest fits. */
static void put_digits(char *p, uint64_t v, unsigned n)
{
    while (n >= 2 && v > UINT32_MAX) {
        unsigned k = (unsigned)(v % 100) * 2;
        v /= 100;
        n -= 2;
        p[n] = digit_pairs[k];
        p[n + 1] = digit_pairs[k + 1];
    }
    uint32_t w = (uint32_t)v;
    while (n >= 2) {
        unsigned k = (w % 100) * 2;
        w /= 100;
        n -= 2;
        p[n] = digit_pairs[k];
        p[n + 1] = digit_pairs[k + 1];
    }
    if (n)
        p[0] = (char)('0' + w % 10);
}

size_t trc_fmt_u64(char *p, uint64_t v)
{
    unsigned n = count_digits(v);
    put_digits(p, v, n);
    return n;
}

size_t trc_fmt_fixed(char *p, uint64_t v, unsigned decimals)
{
    uint64_t scale = pow10_table[decimals];
    size_t n = trc_fmt_u64(p, v / scale);
    uint64_t frac = v % scale;
    if (!frac)
        return n;
    p[n++] = '.';
    /* all the decimals, then the trailing zeros dropped */
    put_digits(p + n, frac, decimals);
    unsigned digits = decimals;
    while (p[n + digits - 1] == '0')
        digits--;
    return n + digits;
}

size_t trc_fmt_f64(char *p, double v)
{
    if (!isfinite(v))
        v = 0;
    /* whole numbers (semaphore values, byte counts) without printf */
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        size_t n = 0;
        if (v < 0) {
            p[n++] = '-';
            v = -v;
        }
        return n + trc_fmt_u64(p + n, (uint64_t)v);
    }
    /* at most six decimals (rates rounded to 1 MB/s, percentages): m / 10^6 with m an integer
     * below 2^53 reads back as the double nearest to it, which is v when v == m / 1e6 */
    double a = fabs(v);
    if (a < 9.0e9) {
        double m = nearbyint(a * 1e6);
        if (m / 1e6 == a) {
            size_t n = 0;
            if (v < 0)
                p[n++] = '-';
            return n + trc_fmt_fixed(p + n, (uint64_t)m, 6);
        }
    }
    /* the shortest of 15..17 significant digits that reads back identically */
    for (int prec = 15; prec <= 17; prec++) {
        int n = snprintf(p, 32, "%.*g", prec, v);
        if (prec == 17 || strtod(p, NULL) == v)
            return (size_t)n;
    }
    return 0;
}

int trc_parse_scaled(const char *s, size_t len, unsigned decimals, uint64_t *out)
{
    size_t i = 0;
    uint64_t mant = 0;
    int exp10 = 0, digits = 0, overflow = 0;
    if (i < len && s[i] == '+')
        i++;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        if (mant > (UINT64_MAX - 9) / 10) {
            overflow = 1;
            exp10++;
        } else {
            mant = mant * 10 + (uint64_t)(s[i] - '0');
        }
    }
    if (i < len && s[i] == '.') {
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
            if (mant > (UINT64_MAX - 9) / 10) {
                overflow = 1;
            } else {
                mant = mant * 10 + (uint64_t)(s[i] - '0');
                exp10--;
            }
        }
    }
    if (!digits)
        return -1;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int neg = 0, e = 0, ed = 0;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            neg = s[i++] == '-';
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, ed++)
            if (e < 10000)
                e = e * 10 + (s[i] - '0');
        if (!ed)
            return -1;
        exp10 += neg ? -e : e;
    }
    if (i != len)
        return -1;
    (void)overflow;
    int shift = exp10 + (int)decimals;
    while (shift > 0 && mant) {
        if (mant > UINT64_MAX / 10)
            return -1;
        mant *= 10;
        shift--;
    }
    if (shift < 0) {
        if (shift < -19) {
            mant = 0;
        } else {
            uint64_t d = 1;
            for (int k = 0; k < -shift; k++)
                d *= 10;
            mant = mant / d + (mant % d >= (d + 1) / 2 ? 1 : 0);
        }
    }
    *out = mant;
    return 0;
}

/* ---- protobuf ------------------------------------------------------------------------------------ */

int pb_reserve(pb_buf_t *b, size_t more)
{
    if (b->n + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + more)
        cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void pb_varint_field(pb_buf_t *b, uint32_t field, uint64_t v)
{
    if (pb_reserve(b, 20))
        return;
    b->n += pb_put_tag(b->p + b->n, field, PB_VARINT);
    b->n += pb_put_varint(b->p + b->n, v);
}

void pb_sint_field(pb_buf_t *b, uint32_t field, int64_t v)
{
    pb_varint_field(b, field, (uint64_t)v);
}

void pb_fixed64_field(pb_buf_t *b, uint32_t field, uint64_t v)
{
    if (pb_reserve(b, 16))
        return;
    b->n += pb_put_tag(b->p + b->n, field, PB_I64);
    for (int i = 0; i < 8; i++)
        b->p[b->n++] = (unsigned char)(v >> (8 * i));
}

void pb_double_field(pb_buf_t *b, uint32_t field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    pb_fixed64_field(b, field, bits);
}

void pb_bytes_field(pb_buf_t *b, uint32_t field, const void *data, size_t n)
{
    if (pb_reserve(b, n + 16))
        return;
    b->n += pb_put_tag(b->p + b->n, field, PB_LEN);
    b->n += pb_put_varint(b->p + b->n, n);
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

void pb_string_field(pb_buf_t *b, uint32_t field, const char *s)
{
    pb_bytes_field(b, field, s, strlen(s));
}

size_t pb_begin(pb_buf_t *b, uint32_t field)
{
    if (pb_reserve(b, 16))
        return 0;
    b->n += pb_put_tag(b->p + b->n, field, PB_LEN);
    size_t at = b->n;
    b->n += 4; /* room for the length; shrunk by pb_end */
    return at;
}

void pb_end(pb_buf_t *b, size_t at)
{
    if (b->failed)
        return;
    size_t len = b->n - at - 4;
    size_t size = pb_varint_size(len);
    if (size <= 4) {
        if (size < 4)
            memmove(b->p + at + size, b->p + at + 4, len);
        pb_put_varint(b->p + at, len);
        b->n -= 4 - size;
    } else {
        b->failed = 1; /* a single message above 256 MiB: never written by this code */
    }
}

int pb_get_varint(pb_in_t *in, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (in->p >= in->end)
            return -1;
        unsigned char c = *in->p++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

int pb_get_fixed(pb_in_t *in, size_t bytes, uint64_t *v)
{
    if ((size_t)(in->end - in->p) < bytes)
        return -1;
    uint64_t r = 0;
    for (size_t i = 0; i < bytes; i++)
        r |= (uint64_t)in->p[i] << (8 * i);
    in->p += bytes;
    *v = r;
    return 0;
}

int pb_next(pb_in_t *in, pb_field_t *f)
{
    if (in->p >= in->end)
        return 0;
    uint64_t tag;
    if (pb_get_varint(in, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
        return -1;
    f->field = (uint32_t)(tag >> 3);
    f->wire = (unsigned)(tag & 7);
    f->data = NULL;
    f->len = 0;
    f->v = 0;
    switch (f->wire) {
    case PB_VARINT:
        return pb_get_varint(in, &f->v) ? -1 : 1;
    case PB_I64:
        return pb_get_fixed(in, 8, &f->v) ? -1 : 1;
    case PB_I32:
        return pb_get_fixed(in, 4, &f->v) ? -1 : 1;
    case PB_LEN: {
        uint64_t n;
        if (pb_get_varint(in, &n) || n > (uint64_t)(in->end - in->p))
            return -1;
        f->data = in->p;
        f->len = (size_t)n;
        in->p += n;
        return 1;
    }
    default: return -1;
    }
}

/* ---- busy time -------------------------------------------------------------------------------- */

static int interval_cmp(const void *x, const void *y)
{
    const trc_interval_t *p = x, *q = y;
    if (p->start != q->start)
        return p->start < q->start ? -1 : 1;
    return p->end < q->end ? -1 : p->end > q->end;
}

uint64_t trc_interval_union(trc_interval_t *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, interval_cmp);
    uint64_t sum = 0, cs = v[0].start, ce = v[0].end;
    for (size_t i = 1; i < n; i++) {
        if (v[i].start > ce) {
            sum += ce - cs;
            cs = v[i].start;
            ce = v[i].end;
        } else if (v[i].end > ce) {
            ce = v[i].end;
        }
    }
    return sum + (ce - cs);
}
