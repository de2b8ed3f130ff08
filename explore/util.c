/*
 * util.c -- the small helpers of explore/ (util.h).
 */
#include "util.h"

#include "ncsim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xp_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

char *xp_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

char *xp_read_file(const char *path, size_t *len)
{
    void *data = NULL;
    if (ncsim_read_file(path, &data, len) != NCSIM_OK)
        return NULL; /* errno kept */
    return data;
}
