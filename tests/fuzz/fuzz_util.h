/*
 * fuzz_util.h -- small helpers shared by the fuzz targets (header-only, static).
 */
#ifndef NCSIM_FUZZ_UTIL_H
#define NCSIM_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

/* Abort with a message: the fuzzer's way of reporting a broken invariant. */
static inline void fz_check(int ok, const char *target, const char *what)
{
    if (!ok) {
        fprintf(stderr, "%s: %s\n", target, what);
        abort();
    }
}

static char fz_dir[32];

/* At exit: the scratch directory and the files in it go. */
static inline void fz_cleanup(void)
{
    DIR *d = opendir(fz_dir);
    if (!d)
        return;
    struct dirent *e;
    char p[300];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%.200s", fz_dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(fz_dir);
}

/* A per-process scratch directory (created once) and a path in it. */
static inline const char *fz_path(const char *name)
{
    char *dir = fz_dir;
    static char path[256];
    if (!dir[0]) {
        strcpy(dir, "/tmp/ncsim-fuzz-XXXXXX");
        if (mkdtemp(dir))
            atexit(fz_cleanup);
        else
            strcpy(dir, "/tmp");
    }
    snprintf(path, sizeof path, "%s/%.200s", dir, name);
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
