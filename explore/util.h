/*
 * util.h -- the small helpers of explore/ (messages into buffers, copies of strings, reading a
 * whole file). explore/ sits above the public API only (docs/design.md), so it keeps its own
 * few lines rather than reaching into models/ for them; files are written with
 * ncsim_write_file, the library's one writer.
 */
#ifndef NCSIM_EXPLORE_UTIL_H
#define NCSIM_EXPLORE_UTIL_H

#include <stddef.h>

/* Format a message into err (at most errlen bytes, always terminated); nothing when err is
 * NULL or errlen is 0. */
void xp_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A malloc'd copy of s (NULL when out of memory). */
char *xp_strdup(const char *s);

/* The whole of PATH ("-": stdin), NUL-terminated, malloc'd; *len its length. NULL with errno
 * set when it cannot be read, or (EFBIG) beyond 1 GiB: specs, manifests, CSV and statistics
 * files are small, a device or a mistaken path is not (ncsim_read_file). */
char *xp_read_file(const char *path, size_t *len);

#endif
