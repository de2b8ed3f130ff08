/*
 * fdio.c -- whole-buffer pipe I/O shared by the sweep and validation worker pools.
 */
#include "fdio.h"

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

int sim_fd_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int sim_fd_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return got ? -1 : 0;
        got += (size_t)n;
    }
    return 1;
}
