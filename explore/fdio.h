/*
 * fdio.h -- whole-buffer reads and writes on pipes, for the worker processes of sweeps and
 * validation (explore/sweep.c, explore/validate.c).
 */
#ifndef NCSIM_EXPLORE_FDIO_H
#define NCSIM_EXPLORE_FDIO_H

#include <stddef.h>

/* Write all len bytes (retrying on EINTR and short writes): 0, or -1 on error. */
int sim_fd_write_all(int fd, const void *buf, size_t len);
/* Read exactly len bytes: 1 when read, 0 at end of file before any byte, -1 on error or a
 * short read (the writer died mid-message). */
int sim_fd_read_all(int fd, void *buf, size_t len);

#endif
