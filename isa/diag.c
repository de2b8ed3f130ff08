#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void isa_diag_init(isa_diag_t *d, unsigned limit)
{
    memset(d, 0, sizeof(*d));
    d->limit = limit ? limit : 50;
}

void isa_diag_free(isa_diag_t *d)
{
    free(d->text);
    memset(d, 0, sizeof(*d));
}

static void diag_append(isa_diag_t *d, const char *s, size_t n)
{
    if (d->len + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        while (cap < d->len + n + 1)
            cap *= 2;
        char *t = realloc(d->text, cap);
        if (!t)
            return; /* out of memory: drop the message rather than crash */
        d->text = t;
        d->cap = cap;
    }
    memcpy(d->text + d->len, s, n);
    d->len += n;
    d->text[d->len] = '\0';
}

static void diag_vappend(isa_diag_t *d, const char *prefix, const char *fmt, va_list ap)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s", prefix);
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof buf)
        vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    size_t len = strlen(buf);
    diag_append(d, buf, len);
    diag_append(d, "\n", 1);
}

int isa_diag_error(isa_diag_t *d, const char *file, uint32_t line, uint32_t col,
                   const char *fmt, ...)
{
    d->errors++;
    if (d->errors > d->limit)
        return 0;
    char prefix[512];
    if (line && col)
        snprintf(prefix, sizeof prefix, "%s:%u:%u: error: ", file ? file : "<input>", line, col);
    else if (line)
        snprintf(prefix, sizeof prefix, "%s:%u: error: ", file ? file : "<input>", line);
    else
        snprintf(prefix, sizeof prefix, "%s: error: ", file ? file : "<input>");
    va_list ap;
    va_start(ap, fmt);
    diag_vappend(d, prefix, fmt, ap);
    va_end(ap);
    if (d->errors == d->limit)
        diag_append(d, "note: too many errors, stopping\n", 32);
    return 1;
}

void isa_diag_note(isa_diag_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vappend(d, "", fmt, ap);
    va_end(ap);
}

int isa_diag_full(const isa_diag_t *d)
{
    return d->errors >= d->limit;
}
