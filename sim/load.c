#define _GNU_SOURCE /* F_SETLEASE, F_SETSIG (Linux) */
#include "load.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "asm.h"
#include "file.h"
#include "ncx.h"

char *sim_read_file(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    /* a regular file is read at once into a buffer of its size (one allocation, one copy):
     * doubling a buffer through a 100 MB program cost a fifth of loading it */
    struct stat sb;
    if (f != stdin && fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        (uint64_t)sb.st_size < SIZE_MAX / 2)
        cap = (size_t)sb.st_size + 1; /* +1: a file that grew meanwhile still reads to its end */
    char *buf = isa_alloc_large(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                free(buf);
                buf = NULL;
            }
            break;
        }
        if (cap >= SIM_MAX_READ_BYTES) { /* /dev/zero, a device, a mistaken path */
            free(buf);
            buf = NULL;
            errno = EFBIG;
            break;
        }
        cap *= 2;
        char *t = realloc(buf, cap + 1);
        if (!t) {
            free(buf);
            errno = ENOMEM;
        }
        buf = t;
    }
    int saved = errno; /* the reason of a failed read (EISDIR), which fclose must not change */
    if (f != stdin)
        fclose(f);
    errno = saved;
    if (!buf)
        return NULL;
    buf[n] = '\0';
    *len = n;
    return buf;
}

int sim_write_file(const char *path, const void *data, size_t len)
{
    if (strcmp(path, "-") == 0)
        return fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : -1;
    return isa_file_write(path, data, len);
}

void (*sim_load_mapped_hook)(const char *path);

ncsim_status_t sim_load_program(const char *path, const isa_geometry_t *geometry,
                                int (*arch_lookup)(void *, const char *, isa_geometry_t *),
                                void *arch_ctx, isa_program_t **out, isa_diag_t *diag)
{
    *out = NULL;
    /* A large .ncx is read where it lies, in the page cache: copying it into fresh memory
     * (which the kernel first zeroes) cost as much as decoding it (47-73 against 62-94 ns
     * per instruction, one load per process). MAP_POPULATE reads it all at once. A mapping
     * faults (SIGBUS) where another process cuts the file shorter under it (`cp` over it,
     * a truncate), so the file is mapped only under a read lease: such a writer then waits
     * until the load is done and has released it (the kernel tells this process with
     * SIGURG, which is ignored unless a program asks for it). Without a lease (a file of
     * another user, a file system without leases, a writer that has it open already) the
     * file is read into memory instead. Text is read into a buffer, which the assembler
     * needs NUL-terminated. */
    if (strcmp(path, "-") != 0) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        uint8_t head[64];
        if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
            sb.st_size >= SIM_MAP_MIN_BYTES && (uint64_t)sb.st_size <= SIM_MAX_READ_BYTES &&
            isa_ncx_is_binary(
                head, (size_t)pread(fd, head, sizeof head, 0) == sizeof head ? sizeof head : 0)) {
            size_t n = (size_t)sb.st_size;
            void *m = MAP_FAILED;
            if (fcntl(fd, F_SETSIG, SIGURG) == 0 && fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
                /* (the size again: the lease stops writers from now on, not before) */
                if (fstat(fd, &sb) == 0 && (size_t)sb.st_size == n)
                    m = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
                if (m == MAP_FAILED)
                    (void)fcntl(fd, F_SETLEASE, F_UNLCK);
            }
            if (m != MAP_FAILED) {
                if (sim_load_mapped_hook)
                    sim_load_mapped_hook(path);
                ncsim_status_t st = isa_ncx_read((const uint8_t *)m, n, geometry, path, out, diag);
                munmap(m, n);
                (void)fcntl(fd, F_SETLEASE, F_UNLCK);
                close(fd);
                return st;
            }
        }
        if (fd >= 0)
            close(fd);
    }
    size_t len = 0;
    char *data = sim_read_file(path, &len);
    if (!data) {
        if (errno == EFBIG)
            isa_diag_error(diag, path, 0, 0, "cannot read: larger than %d MiB, which no "
                           "program is (a device or a mistaken path?)", SIM_MAX_READ_BYTES >> 20);
        else
            isa_diag_error(diag, path, 0, 0, "cannot read: %s", strerror(errno));
        return NCSIM_IO;
    }
    ncsim_status_t st;
    if (isa_ncx_is_binary((const uint8_t *)data, len)) {
        st = isa_ncx_read((const uint8_t *)data, len, geometry, path, out, diag);
    } else {
        isa_asm_options_t opt;
        isa_asm_options_default(&opt);
        opt.filename = path;
        opt.geometry = *geometry;
        opt.arch_lookup = arch_lookup;
        opt.arch_ctx = arch_ctx;
        st = isa_assemble(data, len, &opt, out, diag);
    }
    free(data);
    return st;
}
