/*
 * escape.c -- nothing but printable text on stderr.
 *
 * Messages quote file contents and names (a corrupt .ncx, a .npy header, a source line), and
 * those may hold any bytes. A harness that decodes stderr as UTF-8 must not crash on them,
 * and a terminal must not interpret them. So stderr is replaced, once, by a stream that
 * passes valid UTF-8 text, newlines and tabs through and writes every other byte as \xNN.
 * Carriage returns and ESC (the progress line redraw) pass only when stderr is a terminal.
 */
#define _GNU_SOURCE
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Length of the valid UTF-8 sequence at s (n bytes available): 1..4, 0 if invalid, -1 if
 * it may be valid but is cut short. */
static int utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    int len;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = c & (0x7Fu >> len);
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return -1;
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

size_t cli_escape_into(const char *in, size_t n, char *out, size_t cap, int terminal,
                       size_t *consumed)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0, i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t need;
        int len = 1;
        int keep;
        if (c < 0x80) {
            keep = (c >= 0x20 && c != 0x7F) || c == '\n' || c == '\t' ||
                   (terminal && (c == '\r' || c == 0x1B));
        } else {
            len = utf8_len(s + i, n - i);
            if (len < 0 && consumed) /* incomplete at the end: wait for the rest */
                break;
            keep = len > 0;
            if (!keep)
                len = 1;
        }
        need = keep ? (size_t)len : 4;
        if (o + need + 1 > cap)
            break;
        if (keep) {
            memcpy(out + o, s + i, (size_t)len);
        } else {
            static const char hex[] = "0123456789abcdef";
            out[o] = '\\';
            out[o + 1] = 'x';
            out[o + 2] = hex[c >> 4];
            out[o + 3] = hex[c & 15];
        }
        o += need;
        i += (size_t)len;
    }
    out[o] = 0;
    if (consumed)
        *consumed = i;
    return o;
}

char *cli_escape(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * n + 1);
    if (out)
        cli_escape_into(s, n, out, 4 * n + 1, 0, NULL);
    return out;
}

/* ---- the stderr stream ---- */

typedef struct {
    int fd;
    int terminal;
    unsigned char pend[4]; /* start of a UTF-8 sequence cut by the previous write */
    size_t npend;
} esc_cookie_t;

static int write_all(int fd, const char *b, size_t n)
{
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static ssize_t esc_write(void *cookie, const char *buf, size_t size)
{
    esc_cookie_t *c = cookie;
    char in[1024 + 4], out[4 * (1024 + 4) + 1];
    size_t done = 0;
    while (done < size) {
        size_t take = size - done < 1024 ? size - done : 1024;
        memcpy(in, c->pend, c->npend);
        memcpy(in + c->npend, buf + done, take);
        size_t n = c->npend + take, used = 0;
        size_t o = cli_escape_into(in, n, out, sizeof out, c->terminal, &used);
        if (write_all(c->fd, out, o))
            return -1;
        c->npend = n - used; /* at most 3 bytes of an unfinished sequence */
        if (c->npend > sizeof c->pend)
            c->npend = 0;
        memcpy(c->pend, in + used, c->npend);
        done += take;
    }
    return (ssize_t)size;
}

static int esc_close(void *cookie)
{
    esc_cookie_t *c = cookie;
    if (c->npend) { /* a sequence that never completed: escape it */
        char out[32];
        size_t o = cli_escape_into((const char *)c->pend, c->npend, out, sizeof out, 0, NULL);
        (void)write_all(c->fd, out, o);
    }
    free(c);
    return 0;
}

void cli_escape_stderr(void)
{
    static esc_cookie_t *installed;
    if (installed)
        return;
    esc_cookie_t *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->fd = STDERR_FILENO;
    c->terminal = isatty(STDERR_FILENO);
    cookie_io_functions_t io = {NULL, esc_write, NULL, esc_close};
    FILE *f = fopencookie(c, "w", io);
    if (!f) {
        free(c);
        return;
    }
    setvbuf(f, NULL, _IONBF, 0);
    installed = c;
    stderr = f;
}
