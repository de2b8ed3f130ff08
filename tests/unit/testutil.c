#include "testutil.h"

#include <stdarg.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asm.h"

const char *tu_source_path(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("NCSIM_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", rel);
    return buf;
}

const char *tu_ncsim(void)
{
    const char *b = getenv("NCSIM_BINARY");
    return b ? b : "ncsim";
}

/* Everything a stream holds, NUL-terminated (malloc'd); NULL when out of memory. */
static char *read_stream(FILE *f, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            char *t = realloc(buf, cap + 1);
            if (!t)
                free(buf);
            buf = t;
        }
    }
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = read_stream(f, len);
    fclose(f);
    return buf;
}

int tu_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return (fclose(f) == 0 && w == len) ? 0 : -1;
}

const char *tu_tmpdir(void)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "/tmp/ncsim-test-XXXXXX");
    if (!mkdtemp(buf))
        return "/tmp";
    return buf;
}

void tu_rmdir(const char *dir)
{
    if (strncmp(dir, "/tmp/ncsim-test-", 16) != 0 || strchr(dir, '\''))
        return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
}

/* pclose a command's pipe and hand over its output; returns the exit status or -1. */
static int finish_pipe(FILE *p, char **out)
{
    char *buf = read_stream(p, NULL);
    int st = pclose(p);
    if (out)
        *out = buf;
    else
        free(buf);
    if (st == -1)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int tu_run(const char *cmd, char **out)
{
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    return finish_pipe(p, out);
}

int tu_python(const char *code, const char *args, char **out)
{
    char path[] = "/tmp/ncsim-py-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    size_t len = strlen(code);
    if (write(fd, code, len) != (ssize_t)len) {
        close(fd);
        unlink(path);
        return -1;
    }
    close(fd);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", path, args ? args : "");
    FILE *p = popen(cmd, "r");
    if (!p) {
        unlink(path);
        return -1;
    }
    int rc = finish_pipe(p, out);
    unlink(path);
    return rc;
}

int tu_close(double a, double b, double rtol, double atol)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

const char *tu_join(const char *dir, const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

int tu_sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc != 0 && out)
        fprintf(stderr, "%s\n-> %d: %s\n", cmd, rc, out);
    free(out);
    return rc;
}

struct isa_program *tu_assemble(const char *text, const char *name)
{
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = name ? name : "t.nca";
    isa_diag_t d;
    isa_diag_init(&d, 0);
    isa_program_t *p = NULL;
    if (isa_assemble(text, strlen(text), &opt, &p, &d) != NCSIM_OK)
        fprintf(stderr, "%s", d.text ? d.text : "");
    isa_diag_free(&d);
    return p;
}

isa_view_t tu_view(isa_space_t space, isa_dtype_t dt, unsigned pstart, unsigned pcount,
                   uint64_t offset, unsigned nd, const int64_t *strides, const uint32_t *counts)
{
    isa_view_t v;
    memset(&v, 0, sizeof v);
    v.space = (uint8_t)space;
    v.dtype = (uint8_t)dt;
    v.pstart = (uint8_t)pstart;
    v.pcount = (uint16_t)(space == ISA_SPACE_HBM ? 1 : pcount);
    v.offset = offset;
    v.ndims = (uint8_t)nd;
    for (unsigned i = 0; i < nd; i++) {
        v.stride[i] = strides[i];
        v.count[i] = counts[i];
    }
    return v;
}

int tu_load_arch(const char *name, mdl_arch_t *a)
{
    char err[512];
    if (mdl_arch_load(name, a, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}
