/*
 * error.c -- the per-thread last error, version, names and ncsim_free.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_internal.h"

/* One per thread: the message and the file name live in their own buffers so the pointers in
 * the info stay valid until the next failure in the thread. */
typedef struct api_error {
    ncsim_error_info_t info;
    char *message;
    char file[1024];
    char kind[16];
} api_error_t;

static _Thread_local api_error_t last_error;

static void set_error(ncsim_status_t st, const char *kind, const char *file, uint32_t line,
                      uint32_t column, int32_t core, int32_t engine, int64_t instruction,
                      const char *fmt, va_list ap)
{
    api_error_t *e = &last_error;
    char *msg = NULL;
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n >= 0 && (msg = malloc((size_t)n + 1)) != NULL)
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
    free(e->message);
    e->message = msg;
    snprintf(e->file, sizeof e->file, "%s", file ? file : "");
    snprintf(e->kind, sizeof e->kind, "%s", kind ? kind : "");
    e->info.status = st;
    e->info.message = msg ? msg : ncsim_status_text(st);
    e->info.kind = e->kind;
    e->info.file = e->file;
    e->info.line = line;
    e->info.column = column;
    e->info.core = core;
    e->info.engine = engine;
    e->info.instruction = instruction;
}

ncsim_status_t api_fail(ncsim_status_t st, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(st, kind, NULL, 0, 0, -1, -1, -1, fmt, ap);
    va_end(ap);
    return st;
}

ncsim_status_t api_fail_at(ncsim_status_t st, const char *kind, const char *file, uint32_t line,
                           uint32_t column, int32_t core, int32_t engine, int64_t instruction,
                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(st, kind, file, line, column, core, engine, instruction, fmt, ap);
    va_end(ap);
    return st;
}

ncsim_status_t api_fail_diag(ncsim_status_t st, const isa_diag_t *d)
{
    const char *text = d->text && *d->text ? d->text : ncsim_status_text(st);
    /* "FILE:LINE:COL: error: ..." or "FILE: error: ..." (isa/diag.h); FILE may hold ':' */
    char file[1024] = "";
    unsigned long line = 0, col = 0;
    const char *tag = strstr(text, ": error: ");
    const char *nl = strchr(text, '\n');
    if (tag && (!nl || tag < nl)) {
        const char *end = tag;
        /* walk back over ":COL" and ":LINE" */
        const char *p = end;
        unsigned long nums[2];
        int got = 0;
        while (got < 2) {
            const char *q = p;
            while (q > text && q[-1] >= '0' && q[-1] <= '9')
                q--;
            if (q == p || q == text || q[-1] != ':')
                break;
            nums[got++] = strtoul(q, NULL, 10);
            p = q - 1;
        }
        if (got == 2) {
            col = nums[0];
            line = nums[1];
        } else if (got == 1) {
            line = nums[0];
        }
        size_t fl = (size_t)(p - text);
        if (fl >= sizeof file)
            fl = sizeof file - 1;
        memcpy(file, text, fl);
        file[fl] = '\0';
    }
    const char *kind = st == NCSIM_ASSEMBLY ? "assembly"
                       : st == NCSIM_FORMAT ? "format"
                       : st == NCSIM_IO     ? "io"
                       : st == NCSIM_NOMEM  ? "memory"
                                            : "usage";
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n')
        len--;
    return api_fail_at(st, kind, file, (uint32_t)line, (uint32_t)col, -1, -1, -1, "%.*s",
                       (int)len, text);
}

const char *ncsim_last_error(void)
{
    return last_error.info.message ? last_error.info.message : "";
}

const ncsim_error_info_t *ncsim_last_error_info(void)
{
    api_error_t *e = &last_error;
    if (!e->info.message) {
        e->info.message = "";
        e->info.kind = "";
        e->info.file = "";
        e->info.core = e->info.engine = -1;
        e->info.instruction = -1;
    }
    return &e->info;
}

void ncsim_free(void *p)
{
    free(p);
}

double api_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- names: the public enums are the internal ones, in the same order ---------------------- */

_Static_assert((int)NCSIM_DTYPE_COUNT == (int)ISA_DT_COUNT, "ncsim_dtype_t follows isa_dtype_t");
_Static_assert((int)NCSIM_BF16 == (int)ISA_DT_BF16 && (int)NCSIM_U32 == (int)ISA_DT_U32 &&
                   (int)NCSIM_FP8E3 == (int)ISA_DT_FP8E3,
               "ncsim_dtype_t follows isa_dtype_t");
_Static_assert((int)NCSIM_MEMORY_COUNT == (int)ISA_SPACE_COUNT &&
                   (int)NCSIM_HBM == (int)ISA_SPACE_HBM && (int)NCSIM_PSUM == (int)ISA_SPACE_PSUM,
               "ncsim_memory_t follows isa_space_t");
_Static_assert((int)NCSIM_ENGINE_COUNT == (int)ISA_ENGINE_COUNT &&
                   (int)NCSIM_CC == (int)ISA_ENGINE_CC && (int)NCSIM_POOL == (int)ISA_ENGINE_POOL,
               "ncsim_engine_t follows isa_engine_t");
_Static_assert((int)NCSIM_LOCAL == (int)ISA_TK_LOCAL && (int)NCSIM_SCRATCH == (int)ISA_TK_SCRATCH,
               "ncsim_role_t follows isa_tensor_kind_t");

const char *ncsim_dtype_name(ncsim_dtype_t dtype)
{
    return (unsigned)dtype < NCSIM_DTYPE_COUNT ? isa_dtype_name((isa_dtype_t)dtype) : "";
}

size_t ncsim_dtype_size(ncsim_dtype_t dtype)
{
    return (unsigned)dtype < NCSIM_DTYPE_COUNT ? isa_dtype_size((isa_dtype_t)dtype) : 0;
}

const char *ncsim_memory_name(ncsim_memory_t memory)
{
    static const char *const names[] = {"sbuf", "psum", "hbm"};
    return (unsigned)memory < NCSIM_MEMORY_COUNT ? names[memory] : "";
}

const char *ncsim_role_name(ncsim_role_t role)
{
    return (unsigned)role < NCSIM_ROLE_COUNT ? isa_tensor_kind_name((isa_tensor_kind_t)role) : "";
}

const char *ncsim_engine_name(ncsim_engine_t engine)
{
    return (unsigned)engine < NCSIM_ENGINE_COUNT ? isa_engine_name((isa_engine_t)engine) : "";
}
