/*
 * fuzz_util.h -- small helpers shared by the fuzz targets (header-only, static).
 */
#ifndef NCSIM_FUZZ_UTIL_H
#define NCSIM_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Abort with a message: the fuzzer's way of reporting a broken invariant. */
static inline void fz_check(int ok, const char *target, const char *what)
{
    if (!ok) {
        fprintf(stderr, "%s: %s\n", target, what);
        abort();
    }
}

/* A per-process scratch directory (created once) and a path in it. */
static inline const char *fz_path(const char *name)
{
    static char dir[64];
    static char path[256];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/ncsim-fuzz-%ld", (long)getpid());
        if (mkdtemp(strcpy(path, "/tmp/ncsim-fuzz-XXXXXX")))
            snprintf(dir, sizeof dir, "%s", path);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* Write bytes to a file of the scratch directory; returns its path or NULL. */
static inline const char *fz_write(const char *name, const uint8_t *data, size_t size)
{
    const char *p = fz_path(name);
    FILE *f = fopen(p, "wb");
    if (!f)
        return NULL;
    int ok = fwrite(data, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    return ok ? p : NULL;
}

#endif
