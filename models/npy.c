/*
 * npy.c -- .npy reader and writer (format described in npy.h).
 *
 * The reader trusts nothing in the file: every length is checked against what is actually
 * there before it is used, sizes are computed with overflow checks, and the header dict is
 * parsed by a small hand-written scanner for the Python literal subset NumPy writes (strings,
 * True/False, tuples of non-negative integers) rather than evaluated.
 */
#include "npy.h"

#include "file.h"

#include "numerics.h"
#include "text.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c copies element bytes as they are: it needs a little-endian host"
#endif

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Largest header a streamed (non-regular) file may announce; NumPy's are a few hundred bytes. */
#define NPY_MAX_HEADER (1u << 20)

static const struct {
    const char *descr;
    uint32_t size;
    const char *numpy;
} npy_types[] = {
#define XX(id, descr, size, numpy) {descr, size, numpy},
    MDL_NPY_TYPE_MAP(XX)
#undef XX
};

/* ---- Types ------------------------------------------------------------------------------- */

const char *mdl_npy_type_descr(mdl_npy_type_t t)
{
    return (unsigned)t < MDL_NPY_TYPE_COUNT ? npy_types[t].descr : "?";
}

uint32_t mdl_npy_type_size(mdl_npy_type_t t)
{
    return (unsigned)t < MDL_NPY_TYPE_COUNT ? npy_types[t].size : 0;
}

typedef enum descr_problem {
    DESCR_OK,
    DESCR_BIG_ENDIAN,
    DESCR_OBJECT,
    DESCR_UNSUPPORTED
} descr_problem_t;

/*
 * Classify a descr string: byte-order mark ('<', '>', '|', '='), kind letter, size in bytes.
 * Multi-byte types must be little-endian ('<'); one-byte types may carry any of '<' '>' '|'.
 */
static descr_problem_t descr_classify(const char *descr, mdl_npy_type_t *type)
{
    const char *d = descr;
    char order = 0;
    if (*d && strchr("<>|=", *d))
        order = *d++;
    char kind = *d;
    if (kind == 'O')
        return DESCR_OBJECT;
    if (kind == '\0')
        return DESCR_UNSUPPORTED;
    d++;
    unsigned size = 0;
    if (*d < '1' || *d > '9')
        return DESCR_UNSUPPORTED;
    for (; *d >= '0' && *d <= '9'; d++) {
        size = size * 10 + (unsigned)(*d - '0');
        if (size > 64)
            return DESCR_UNSUPPORTED;
    }
    if (*d != '\0')
        return DESCR_UNSUPPORTED; /* e.g. '<M8[ns]' */
    if (size > 1 && order == '>' && strchr("biuf", kind)) {
        /* big-endian: read, then byte-swapped to little-endian (normalise_layout) */
        for (int i = 0; i < MDL_NPY_TYPE_COUNT; i++)
            if (npy_types[i].descr[1] == kind && npy_types[i].size == size) {
                *type = (mdl_npy_type_t)i;
                return DESCR_BIG_ENDIAN;
            }
        return DESCR_UNSUPPORTED;
    }
    if (size > 1 ? order != '<' : !(order == '<' || order == '>' || order == '|'))
        return DESCR_UNSUPPORTED;
    for (int i = 0; i < MDL_NPY_TYPE_COUNT; i++) {
        if (npy_types[i].descr[1] == kind && npy_types[i].size == size) {
            *type = (mdl_npy_type_t)i;
            return DESCR_OK;
        }
    }
    return DESCR_UNSUPPORTED;
}

mdl_npy_type_t mdl_npy_type_lookup(const char *descr)
{
    mdl_npy_type_t t = MDL_NPY_TYPE_COUNT;
    if (!descr || descr_classify(descr, &t) != DESCR_OK)
        return MDL_NPY_TYPE_COUNT;
    return t;
}

mdl_npy_type_t mdl_npy_type_for_dtype(isa_dtype_t t)
{
    switch (t) {
    case ISA_DT_FP32:
    case ISA_DT_BF16:
    case ISA_DT_TF32:
    case ISA_DT_FP8E4:
    case ISA_DT_FP8E5:
    case ISA_DT_FP8E3:
        return MDL_NPY_F4;
    case ISA_DT_FP16:
        return MDL_NPY_F2;
    case ISA_DT_I8:
        return MDL_NPY_I1;
    case ISA_DT_U8:
        return MDL_NPY_U1;
    case ISA_DT_I16:
        return MDL_NPY_I2;
    case ISA_DT_U16:
        return MDL_NPY_U2;
    case ISA_DT_I32:
        return MDL_NPY_I4;
    case ISA_DT_U32:
        return MDL_NPY_U4;
    case ISA_DT_COUNT:
        break;
    }
    return MDL_NPY_TYPE_COUNT;
}

int mdl_npy_dtype_is_native(isa_dtype_t t)
{
    switch (t) {
    case ISA_DT_BF16:
    case ISA_DT_TF32:
    case ISA_DT_FP8E4:
    case ISA_DT_FP8E5:
    case ISA_DT_FP8E3:
    case ISA_DT_COUNT:
        return 0;
    default:
        return 1;
    }
}

/* "(2, 3)", "(5,)" or "()" -- a shape as Python prints it. */
static void format_shape(const uint64_t *shape, uint32_t ndim, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "(");
    for (uint32_t i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%llu", i ? ", " : "",
                                 (unsigned long long)shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "%s)", ndim == 1 ? "," : "");
}

/* ---- Header parsing ------------------------------------------------------------------------ */

typedef struct scanner {
    const char *p, *end;
    const char *name; /* for messages */
    char *err;
    size_t errlen;
} scanner_t;

static void skip_space(scanner_t *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int expect_char(scanner_t *s, char c, const char *what)
{
    skip_space(s);
    if (s->p >= s->end || *s->p != c) {
        mdl_errf(s->err, s->errlen, "%s: malformed header: expected '%c' %s", s->name, c, what);
        return -1;
    }
    s->p++;
    return 0;
}

/* A quoted Python string without escapes, copied into buf (truncated to cap - 1). */
static int scan_string(scanner_t *s, char *buf, size_t cap, const char *what)
{
    skip_space(s);
    if (s->p >= s->end || (*s->p != '\'' && *s->p != '"')) {
        mdl_errf(s->err, s->errlen, "%s: malformed header: expected a string for %s", s->name,
                 what);
        return -1;
    }
    char quote = *s->p++;
    size_t n = 0;
    while (s->p < s->end && *s->p != quote) {
        if (*s->p == '\\' || *s->p == '\n') {
            mdl_errf(s->err, s->errlen, "%s: malformed header: unsupported character in %s",
                     s->name, what);
            return -1;
        }
        if (n + 1 < cap)
            buf[n++] = *s->p;
        s->p++;
    }
    if (s->p >= s->end) {
        mdl_errf(s->err, s->errlen, "%s: malformed header: unterminated string in %s", s->name,
                 what);
        return -1;
    }
    s->p++;
    buf[n] = '\0';
    return 0;
}

static int scan_bool(scanner_t *s, int *v)
{
    skip_space(s);
    size_t left = (size_t)(s->end - s->p);
    if (left >= 4 && memcmp(s->p, "True", 4) == 0) {
        *v = 1;
        s->p += 4;
    } else if (left >= 5 && memcmp(s->p, "False", 5) == 0) {
        *v = 0;
        s->p += 5;
    } else {
        mdl_errf(s->err, s->errlen, "%s: malformed header: fortran_order must be True or False",
                 s->name);
        return -1;
    }
    return 0;
}

/* A tuple of non-negative integers: "()", "(3,)", "(2, 3)", "(2, 3,)". */
static int scan_shape(scanner_t *s, uint64_t *shape, uint32_t *ndim)
{
    if (expect_char(s, '(', "to open the shape tuple"))
        return -1;
    *ndim = 0;
    for (;;) {
        skip_space(s);
        if (s->p < s->end && *s->p == ')') {
            s->p++;
            return 0;
        }
        if (s->p < s->end && *s->p == '-') {
            mdl_errf(s->err, s->errlen, "%s: malformed header: negative dimension in shape",
                     s->name);
            return -1;
        }
        if (s->p >= s->end || *s->p < '0' || *s->p > '9') {
            mdl_errf(s->err, s->errlen, "%s: malformed header: shape must be a tuple of integers",
                     s->name);
            return -1;
        }
        uint64_t v = 0;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
            uint64_t digit = (uint64_t)(*s->p - '0');
            if (v > (UINT64_MAX - digit) / 10) {
                mdl_errf(s->err, s->errlen, "%s: shape dimension is too large", s->name);
                return -1;
            }
            v = v * 10 + digit;
            s->p++;
        }
        if (*ndim >= MDL_NPY_MAX_DIMS) {
            mdl_errf(s->err, s->errlen, "%s: arrays of more than %d dimensions are not supported",
                     s->name, MDL_NPY_MAX_DIMS);
            return -1;
        }
        shape[(*ndim)++] = v;
        skip_space(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == ')') {
            s->p++;
            if (*ndim == 1) {
                /* "(3)" is the integer 3 in Python, not a tuple: NumPy never writes it. */
                mdl_errf(s->err, s->errlen, "%s: malformed header: a 1-d shape is written (N,)",
                         s->name);
                return -1;
            }
            return 0;
        }
        mdl_errf(s->err, s->errlen, "%s: malformed header: expected ',' or ')' in shape", s->name);
        return -1;
    }
}

/*
 * Parse the header dict text[0..n) into out's type and shape fields. NumPy's own reader
 * requires exactly the keys descr, fortran_order and shape; so does this one.
 */
static ncsim_status_t decode_dict(const char *text, size_t n, const char *name, mdl_npy_t *out,
                                  char *err, size_t errlen)
{
    scanner_t s = {text, text + n, name, err, errlen};
    char descr[32] = "";
    int fortran = 0;
    bool have_descr = false, have_fortran = false, have_shape = false;

    if (expect_char(&s, '{', "at the start of the header dict"))
        return NCSIM_FORMAT;
    for (;;) {
        skip_space(&s);
        if (s.p < s.end && *s.p == '}') {
            s.p++;
            break;
        }
        char key[32];
        if (scan_string(&s, key, sizeof key, "a header key") || expect_char(&s, ':', "after a key"))
            return NCSIM_FORMAT;
        bool *seen;
        if (strcmp(key, "descr") == 0) {
            seen = &have_descr;
            skip_space(&s);
            if (s.p < s.end && *s.p == '[') {
                mdl_errf(err, errlen,
                         "%s: structured arrays (a list 'descr') are not supported: save a "
                         "plain numeric array",
                         name);
                return NCSIM_FORMAT;
            }
            if (scan_string(&s, descr, sizeof descr, "'descr'"))
                return NCSIM_FORMAT;
        } else if (strcmp(key, "fortran_order") == 0) {
            seen = &have_fortran;
            if (scan_bool(&s, &fortran))
                return NCSIM_FORMAT;
        } else if (strcmp(key, "shape") == 0) {
            seen = &have_shape;
            if (scan_shape(&s, out->shape, &out->ndim))
                return NCSIM_FORMAT;
        } else {
            mdl_errf(err, errlen, "%s: malformed header: unexpected key '%s'", name, key);
            return NCSIM_FORMAT;
        }
        if (*seen) {
            mdl_errf(err, errlen, "%s: malformed header: key '%s' appears twice", name, key);
            return NCSIM_FORMAT;
        }
        *seen = true;
        skip_space(&s);
        if (s.p < s.end && *s.p == ',') {
            s.p++;
            continue;
        }
        if (expect_char(&s, '}', "or ',' after a value"))
            return NCSIM_FORMAT;
        break;
    }
    skip_space(&s);
    if (s.p != s.end) {
        mdl_errf(err, errlen, "%s: malformed header: unexpected text after the header dict", name);
        return NCSIM_FORMAT;
    }
    if (!have_descr || !have_fortran || !have_shape) {
        mdl_errf(err, errlen, "%s: malformed header: missing key '%s'", name,
                 !have_descr     ? "descr"
                 : !have_fortran ? "fortran_order"
                                 : "shape");
        return NCSIM_FORMAT;
    }

    mdl_npy_type_t type = MDL_NPY_TYPE_COUNT;
    switch (descr_classify(descr, &type)) {
    case DESCR_OK:
        break;
    case DESCR_BIG_ENDIAN:
        out->swap = 1;
        break;
    case DESCR_OBJECT:
        mdl_errf(err, errlen,
                 "%s: object arrays ('%s') are not supported: they hold pickled Python objects, "
                 "not numbers",
                 name, descr);
        return NCSIM_FORMAT;
    case DESCR_UNSUPPORTED:
        mdl_errf(err, errlen,
                 "%s: unsupported dtype '%s' (supported: little-endian bool, int8-64, "
                 "uint8-64, float16/32/64)",
                 name, descr);
        return NCSIM_FORMAT;
    }
    out->fortran = (uint8_t)(fortran != 0);

    out->type = type;
    snprintf(out->descr, sizeof out->descr, "%s", npy_types[type].descr);
    out->itemsize = npy_types[type].size;
    uint64_t count = 1;
    for (uint32_t i = 0; i < out->ndim; i++) {
        if (out->shape[i] != 0 && count > UINT64_MAX / out->shape[i]) {
            mdl_errf(err, errlen, "%s: shape is too large", name);
            return NCSIM_FORMAT;
        }
        count *= out->shape[i];
    }
    if (count > SIZE_MAX / out->itemsize) {
        mdl_errf(err, errlen, "%s: shape is too large", name);
        return NCSIM_FORMAT;
    }
    out->count = count;
    out->nbytes = (size_t)count * out->itemsize;
    return NCSIM_OK;
}

/*
 * The fixed part before the header dict: magic, version, header length. `len` bytes are
 * available at b. On success *preamble is 10 (v1.0) or 12 (v2.0, v3.0).
 */
static ncsim_status_t decode_preamble(const unsigned char *b, size_t len, const char *name,
                                      uint8_t *major, size_t *preamble, uint32_t *hlen, char *err,
                                      size_t errlen)
{
    size_t m = len < sizeof npy_magic ? len : sizeof npy_magic;
    if (memcmp(b, npy_magic, m) != 0 || len == 0) {
        mdl_errf(err, errlen, "%s: not a .npy file (bad magic: expected \\x93NUMPY)", name);
        return NCSIM_FORMAT;
    }
    if (len < 8) {
        mdl_errf(err, errlen, "%s: truncated header (%zu bytes)", name, len);
        return NCSIM_FORMAT;
    }
    *major = b[6];
    if (b[6] < 1 || b[6] > 3 || b[7] != 0) {
        mdl_errf(err, errlen, "%s: unsupported .npy format version %u.%u (1.0, 2.0, 3.0 are read)",
                 name, (unsigned)b[6], (unsigned)b[7]);
        return NCSIM_FORMAT;
    }
    *preamble = b[6] == 1 ? 10 : 12;
    if (len < *preamble) {
        mdl_errf(err, errlen, "%s: truncated header (%zu bytes)", name, len);
        return NCSIM_FORMAT;
    }
    if (b[6] == 1)
        *hlen = (uint32_t)b[8] | (uint32_t)b[9] << 8;
    else
        *hlen =
            (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
    return NCSIM_OK;
}

/* Compare the data bytes present with what the header promises. */
static ncsim_status_t check_data_size(const mdl_npy_t *a, uint64_t available, const char *name,
                                      char *err, size_t errlen)
{
    if (available == a->nbytes)
        return NCSIM_OK;
    char shape[256];
    format_shape(a->shape, a->ndim, shape, sizeof shape);
    if (available < a->nbytes)
        mdl_errf(err, errlen,
                 "%s: truncated data: shape %s of %s needs %zu bytes, the file has %llu", name,
                 shape, a->descr, a->nbytes, (unsigned long long)available);
    else
        mdl_errf(err, errlen,
                 "%s: %llu bytes of unexpected data after the array (shape %s of %s needs %zu "
                 "bytes)",
                 name, (unsigned long long)(available - a->nbytes), shape, a->descr, a->nbytes);
    return NCSIM_FORMAT;
}

void mdl_npy_free(mdl_npy_t *a)
{
    if (!a)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/*
 * Bring data read as written into the one layout the rest of ncsim uses: little-endian,
 * C (row-major) order. Big-endian files are byte-swapped; Fortran-order files (what
 * np.save writes for a transposed array, a.T) are permuted, so the array means what it
 * meant in NumPy.
 */
static ncsim_status_t normalise_layout(mdl_npy_t *a, const char *name, char *err,
                                       size_t errlen)
{
    size_t es = a->itemsize;
    if (a->swap && es > 1) {
        unsigned char *p = a->data;
        for (uint64_t i = 0; i < a->count; i++, p += es)
            for (size_t k = 0; k < es / 2; k++) {
                unsigned char t = p[k];
                p[k] = p[es - 1 - k];
                p[es - 1 - k] = t;
            }
    }
    a->swap = 0;
    if (a->fortran && a->ndim > 1 && a->count > 1) {
        unsigned char *c = malloc(a->nbytes);
        if (!c) {
            mdl_errf(err, errlen,
                     "%s: out of host memory: %zu bytes to reorder a Fortran-order "
                     "array",
                     name, a->nbytes);
            return NCSIM_NOMEM;
        }
        /* walk the C-order index (i0, ..., in-1) with the Fortran offset alongside:
         * offset = i0 + d0 * (i1 + d1 * (...)), so dim k has Fortran stride prod(d0..dk-1) */
        uint64_t idx[MDL_NPY_MAX_DIMS] = {0}, fstride[MDL_NPY_MAX_DIMS];
        uint64_t acc = 1;
        for (uint32_t k = 0; k < a->ndim; k++) {
            fstride[k] = acc;
            acc *= a->shape[k];
        }
        const unsigned char *f = a->data;
        uint64_t off = 0;
        for (uint64_t i = 0; i < a->count; i++) {
            memcpy(c + i * es, f + off * es, es);
            for (uint32_t k = a->ndim; k-- > 0;) { /* next C-order index */
                if (++idx[k] < a->shape[k]) {
                    off += fstride[k];
                    break;
                }
                off -= (idx[k] - 1) * fstride[k];
                idx[k] = 0;
            }
        }
        free(a->data);
        a->data = c;
    }
    a->fortran = 0;
    return NCSIM_OK;
}

ncsim_status_t mdl_npy_parse(const void *bytes, size_t len, const char *name, mdl_npy_t *out,
                             char *err, size_t errlen)
{
    const unsigned char *b = bytes;
    memset(out, 0, sizeof *out);
    if (!name)
        name = "<memory>";
    if (!b)
        len = 0;
    uint8_t major = 0;
    size_t preamble = 0;
    uint32_t hlen = 0;
    ncsim_status_t st =
        decode_preamble(b ? b : npy_magic, len, name, &major, &preamble, &hlen, err, errlen);
    if (st != NCSIM_OK)
        return st;
    if (hlen > len - preamble) {
        mdl_errf(err, errlen, "%s: truncated header: it should be %u bytes, the file has %zu", name,
                 hlen, len - preamble);
        return NCSIM_FORMAT;
    }
    st = decode_dict((const char *)b + preamble, hlen, name, out, err, errlen);
    if (st == NCSIM_OK)
        st = check_data_size(out, len - preamble - hlen, name, err, errlen);
    if (st != NCSIM_OK) {
        memset(out, 0, sizeof *out);
        return st;
    }
    out->version = major;
    out->data = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->data) {
        mdl_errf(err, errlen, "%s: out of memory for %zu bytes of data", name, out->nbytes);
        memset(out, 0, sizeof *out);
        return NCSIM_NOMEM;
    }
    if (out->nbytes)
        memcpy(out->data, b + preamble + hlen, out->nbytes);
    st = normalise_layout(out, name, err, errlen);
    if (st != NCSIM_OK)
        mdl_npy_free(out);
    return st;
}

/* fread that tells a short read from a read error. */
static ncsim_status_t read_exact(FILE *f, void *buf, size_t n, size_t *got, const char *path,
                                 char *err, size_t errlen)
{
    *got = n ? fread(buf, 1, n, f) : 0;
    if (*got < n && ferror(f)) {
        mdl_errf(err, errlen, "%s: read error: %s", path, strerror(errno));
        return NCSIM_IO;
    }
    return NCSIM_OK;
}

/*
 * Read in three steps (preamble, header, data) so a bad or huge file is rejected before any
 * large allocation: for a regular file the promised sizes are compared with the file size.
 */
static ncsim_status_t read_stream(FILE *f, const char *path, mdl_npy_t *out, char *err,
                                  size_t errlen)
{
    struct stat st_buf;
    bool sized = fstat(fileno(f), &st_buf) == 0 && S_ISREG(st_buf.st_mode);
    uint64_t file_size = sized ? (uint64_t)st_buf.st_size : 0;

    unsigned char pre[12];
    size_t got;
    ncsim_status_t st = read_exact(f, pre, 8, &got, path, err, errlen);
    if (st != NCSIM_OK)
        return st;
    if (got == 8 && pre[6] >= 2 && pre[6] <= 3) {
        size_t more;
        st = read_exact(f, pre + 8, 4, &more, path, err, errlen);
        if (st != NCSIM_OK)
            return st;
        got += more;
    } else if (got == 8) {
        size_t more;
        st = read_exact(f, pre + 8, 2, &more, path, err, errlen);
        if (st != NCSIM_OK)
            return st;
        got += more;
    }
    uint8_t major = 0;
    size_t preamble = 0;
    uint32_t hlen = 0;
    st = decode_preamble(pre, got, path, &major, &preamble, &hlen, err, errlen);
    if (st != NCSIM_OK)
        return st;
    if (sized ? hlen > file_size - preamble : hlen > NPY_MAX_HEADER) {
        if (sized)
            mdl_errf(err, errlen, "%s: truncated header: it should be %u bytes, the file has %llu",
                     path, hlen, (unsigned long long)(file_size - preamble));
        else
            mdl_errf(err, errlen, "%s: header of %u bytes is implausibly large", path, hlen);
        return NCSIM_FORMAT;
    }
    char *header = malloc(hlen ? hlen : 1);
    if (!header) {
        mdl_errf(err, errlen, "%s: out of memory", path);
        return NCSIM_NOMEM;
    }
    st = read_exact(f, header, hlen, &got, path, err, errlen);
    if (st == NCSIM_OK && got < hlen) {
        mdl_errf(err, errlen, "%s: truncated header: it should be %u bytes, the file has %zu", path,
                 hlen, got);
        st = NCSIM_FORMAT;
    }
    if (st == NCSIM_OK)
        st = decode_dict(header, hlen, path, out, err, errlen);
    free(header);
    if (st != NCSIM_OK)
        return st;
    if (sized) {
        st = check_data_size(out, file_size - preamble - hlen, path, err, errlen);
        if (st != NCSIM_OK)
            return st;
    }
    out->version = major;
    out->data = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->data) {
        mdl_errf(err, errlen, "%s: out of memory for %zu bytes of data", path, out->nbytes);
        return NCSIM_NOMEM;
    }
    st = read_exact(f, out->data, out->nbytes, &got, path, err, errlen);
    if (st != NCSIM_OK)
        return st;
    if (got < out->nbytes)
        return check_data_size(out, got, path, err, errlen);
    if (fgetc(f) != EOF) {
        /* Grown since fstat, or a pipe: count what is left for the message. */
        uint64_t extra = 1;
        while (fgetc(f) != EOF)
            extra++;
        return check_data_size(out, out->nbytes + extra, path, err, errlen);
    }
    return normalise_layout(out, path, err, errlen);
}

ncsim_status_t mdl_npy_read(const char *path, mdl_npy_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        mdl_errf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return NCSIM_IO;
    }
    ncsim_status_t st = read_stream(f, path, out, err, errlen);
    fclose(f);
    if (st != NCSIM_OK)
        mdl_npy_free(out);
    return st;
}

/* ---- Writing ----------------------------------------------------------------------------- */

/* Build the preamble and padded header for a descr and shape. Returns the length, or 0. */
static size_t build_header(const char *descr, const uint64_t *shape, uint32_t ndim, char *buf,
                           size_t cap)
{
    char shape_text[256];
    format_shape(shape, ndim, shape_text, sizeof shape_text);
    char dict[400];
    int dict_len =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
                 shape_text);
    if (dict_len < 0 || (size_t)dict_len >= sizeof dict)
        return 0;
    /* Version 1.0 holds headers up to 65535 bytes; ours are far shorter, so 2.0 never
     * happens in practice but is the correct fallback. */
    size_t preamble = 10;
    size_t total = (preamble + (size_t)dict_len + 1 + 63) / 64 * 64;
    if (total - preamble > 65535) {
        preamble = 12;
        total = (preamble + (size_t)dict_len + 1 + 63) / 64 * 64;
    }
    if (total > cap)
        return 0;
    size_t hlen = total - preamble;
    memcpy(buf, npy_magic, sizeof npy_magic);
    buf[6] = preamble == 10 ? 1 : 2;
    buf[7] = 0;
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)((hlen >> 8) & 0xff);
    if (preamble == 12) {
        buf[10] = (char)((hlen >> 16) & 0xff);
        buf[11] = (char)((hlen >> 24) & 0xff);
    }
    memcpy(buf + preamble, dict, (size_t)dict_len);
    memset(buf + preamble + dict_len, ' ', total - preamble - (size_t)dict_len - 1);
    buf[total - 1] = '\n';
    return total;
}

ncsim_status_t mdl_npy_write(const char *path, const char *descr, const uint64_t *shape,
                             uint32_t ndim, const void *data, char *err, size_t errlen)
{
    mdl_npy_type_t type = mdl_npy_type_lookup(descr);
    if (type == MDL_NPY_TYPE_COUNT) {
        mdl_errf(err, errlen, "%s: cannot write dtype '%s'", path, descr ? descr : "(null)");
        return NCSIM_USAGE;
    }
    if (ndim > MDL_NPY_MAX_DIMS || (ndim > 0 && !shape)) {
        mdl_errf(err, errlen, "%s: cannot write an array of %u dimensions", path, ndim);
        return NCSIM_USAGE;
    }
    uint64_t count = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        if (shape[i] != 0 && count > UINT64_MAX / shape[i]) {
            mdl_errf(err, errlen, "%s: shape is too large", path);
            return NCSIM_USAGE;
        }
        count *= shape[i];
    }
    uint32_t size = mdl_npy_type_size(type);
    if (count > SIZE_MAX / size) {
        mdl_errf(err, errlen, "%s: shape is too large", path);
        return NCSIM_USAGE;
    }
    size_t nbytes = (size_t)count * size;
    if (nbytes > 0 && !data) {
        mdl_errf(err, errlen, "%s: no data to write", path);
        return NCSIM_USAGE;
    }
    char header[1024];
    size_t header_len = build_header(mdl_npy_type_descr(type), shape, ndim, header, sizeof header);
    if (header_len == 0) {
        mdl_errf(err, errlen, "%s: header does not fit", path);
        return NCSIM_INTERNAL;
    }

    /* through a temporary renamed into place, or in place for /dev/null or a FIFO */
    isa_file_out_t o;
    if (isa_file_begin(&o, path)) {
        mdl_errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return errno == ENOMEM ? NCSIM_NOMEM : NCSIM_IO;
    }
    int ok = fwrite(header, 1, header_len, o.f) == header_len &&
             (nbytes == 0 || fwrite(data, 1, nbytes, o.f) == nbytes);
    if (isa_file_commit(&o, ok)) {
        mdl_errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return NCSIM_IO;
    }
    return NCSIM_OK;
}

/* ---- Binding checks ------------------------------------------------------------------------ */

int mdl_npy_convertible(mdl_npy_type_t from, mdl_npy_type_t to)
{
    if (from == to)
        return 1;
    int ffloat = from == MDL_NPY_F2 || from == MDL_NPY_F4 || from == MDL_NPY_F8;
    int tfloat = to == MDL_NPY_F2 || to == MDL_NPY_F4;
    int fint = from >= MDL_NPY_BOOL && from <= MDL_NPY_U8;
    int tint = to >= MDL_NPY_I1 && to <= MDL_NPY_U4;
    return (ffloat && tfloat) || (fint && tint);
}

/* Element i of a as a double (floats) or int64/uint64 (integers). */
static double npy_get_f(const mdl_npy_t *a, uint64_t i)
{
    const unsigned char *p = (const unsigned char *)a->data + i * a->itemsize;
    switch (a->type) {
    case MDL_NPY_F2: {
        uint16_t b;
        memcpy(&b, p, 2);
        return mdl_fp16_bits_to_f32(b);
    }
    case MDL_NPY_F4: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case MDL_NPY_F8: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    default: return 0;
    }
}

static int npy_get_i(const mdl_npy_t *a, uint64_t i, int64_t *v, uint64_t *u, int *neg)
{
    const unsigned char *p = (const unsigned char *)a->data + i * a->itemsize;
    *neg = 0;
    switch (a->type) {
    case MDL_NPY_BOOL: *u = p[0] != 0; break;
    case MDL_NPY_I1: *v = (int8_t)p[0]; *neg = *v < 0; *u = (uint64_t)*v; break;
    case MDL_NPY_U1: *u = p[0]; break;
    case MDL_NPY_I2: { int16_t x; memcpy(&x, p, 2); *v = x; *neg = x < 0; *u = (uint64_t)*v; break; }
    case MDL_NPY_U2: { uint16_t x; memcpy(&x, p, 2); *u = x; break; }
    case MDL_NPY_I4: { int32_t x; memcpy(&x, p, 4); *v = x; *neg = x < 0; *u = (uint64_t)*v; break; }
    case MDL_NPY_U4: { uint32_t x; memcpy(&x, p, 4); *u = x; break; }
    case MDL_NPY_I8: { int64_t x; memcpy(&x, p, 8); *v = x; *neg = x < 0; *u = (uint64_t)x; break; }
    case MDL_NPY_U8: { memcpy(u, p, 8); break; }
    default: return -1;
    }
    if (!*neg)
        *v = *u > INT64_MAX ? INT64_MAX : (int64_t)*u;
    return 0;
}

ncsim_status_t mdl_npy_convert(mdl_npy_t *a, mdl_npy_type_t to, const char *path,
                               const char *tensor, char *err, size_t errlen)
{
    if (a->type == to || !mdl_npy_convertible(a->type, to))
        return NCSIM_OK; /* same type, or mdl_npy_expect refuses it with its message */
    size_t es = npy_types[to].size;
    unsigned char *out = malloc(a->count ? a->count * es : 1);
    if (!out) {
        mdl_errf(err, errlen, "%s: out of host memory: %llu bytes to convert tensor '%s'", path,
                 (unsigned long long)(a->count * es), tensor);
        return NCSIM_NOMEM;
    }
    int tint = to != MDL_NPY_F2 && to != MDL_NPY_F4;
    /* integer range of the target */
    int64_t lo = 0, hi = 0;
    switch (to) {
    case MDL_NPY_I1: lo = INT8_MIN, hi = INT8_MAX; break;
    case MDL_NPY_U1: hi = UINT8_MAX; break;
    case MDL_NPY_I2: lo = INT16_MIN, hi = INT16_MAX; break;
    case MDL_NPY_U2: hi = UINT16_MAX; break;
    case MDL_NPY_I4: lo = INT32_MIN, hi = INT32_MAX; break;
    case MDL_NPY_U4: hi = UINT32_MAX; break;
    default: break;
    }
    for (uint64_t i = 0; i < a->count; i++) {
        unsigned char *d = out + i * es;
        if (!tint) {
            double x = npy_get_f(a, i);
            float f = (float)x; /* round to nearest even */
            if (to == MDL_NPY_F4) {
                memcpy(d, &f, 4);
            } else {
                uint16_t b = mdl_f32_to_fp16_bits(f);
                memcpy(d, &b, 2);
            }
            continue;
        }
        int64_t v = 0;
        uint64_t u = 0;
        int neg = 0;
        npy_get_i(a, i, &v, &u, &neg);
        if (v < lo || v > hi || (!neg && u > (uint64_t)hi)) {
            free(out);
            mdl_errf(err, errlen,
                     "%s: tensor '%s' is %s, but element %llu of the file is %s%llu, "
                     "which does not fit: no integer is converted with loss",
                     path, tensor, npy_types[to].numpy, (unsigned long long)i, neg ? "-" : "",
                     (unsigned long long)(neg ? 0 - (uint64_t)v : u));
            return NCSIM_FORMAT;
        }
        switch (es) {
        case 1: { uint8_t x = (uint8_t)v; memcpy(d, &x, 1); break; }
        case 2: { uint16_t x = (uint16_t)v; memcpy(d, &x, 2); break; }
        default: { uint32_t x = (uint32_t)v; memcpy(d, &x, 4); break; }
        }
    }
    free(a->data);
    a->data = out;
    a->type = to;
    a->itemsize = (uint32_t)es;
    a->nbytes = (size_t)(a->count * es);
    snprintf(a->descr, sizeof a->descr, "%s", npy_types[to].descr);
    return NCSIM_OK;
}

ncsim_status_t mdl_npy_expect(const mdl_npy_t *a, const char *path, const char *tensor,
                              isa_dtype_t t, const uint64_t *dims, uint32_t ndim, char *err,
                              size_t errlen)
{
    mdl_npy_type_t want = mdl_npy_type_for_dtype(t);
    if (want == MDL_NPY_TYPE_COUNT) {
        mdl_errf(err, errlen, "%s: tensor '%s' has an unknown dtype", path, tensor);
        return NCSIM_INTERNAL;
    }
    if (a->type != want) {
        mdl_errf(err, errlen,
                 "%s: tensor '%s' is %s and is read from %s (%s) data, but the file holds %s "
                 "(%s): save it with arr.astype(np.%s)",
                 path, tensor, isa_dtype_name(t), npy_types[want].descr, npy_types[want].numpy,
                 a->descr, npy_types[a->type].numpy, npy_types[want].numpy);
        return NCSIM_FORMAT;
    }
    bool same = a->ndim == ndim;
    for (uint32_t i = 0; same && i < ndim; i++)
        same = a->shape[i] == dims[i];
    if (!same) {
        char want_shape[256], have_shape[256];
        format_shape(dims, ndim, want_shape, sizeof want_shape);
        format_shape(a->shape, a->ndim, have_shape, sizeof have_shape);
        mdl_errf(err, errlen, "%s: tensor '%s' has shape %s but the file's array has shape %s",
                 path, tensor, want_shape, have_shape);
        return NCSIM_FORMAT;
    }
    return NCSIM_OK;
}
