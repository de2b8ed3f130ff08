/*
 * testutil.h -- small helpers shared by the cmocka tests.
 */
#ifndef NCSIM_TESTUTIL_H
#define NCSIM_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "isa.h"

/* Path inside the source tree (NCSIM_SOURCE_DIR, set by ctest); static buffer. */
const char *tu_source_path(const char *rel);
/* Read a whole file; NULL on error. *len may be NULL. Caller frees. */
char *tu_read_file(const char *path, size_t *len);
/* Write a whole file; 0 on success. */
int tu_write_file(const char *path, const void *data, size_t len);
/* A fresh temporary directory (removed by nothing: under /tmp). Static buffer. */
const char *tu_tmpdir(void);
/* Remove a directory tu_tmpdir made, with its contents (nothing for any other path). */
void tu_rmdir(const char *dir);
/* Run /usr/bin/python3 with `code` as the program and `args` appended; capture stdout into
 * *out (malloc'd, may be NULL). Returns the exit status, or -1 if it could not run. */
int tu_python(const char *code, const char *args, char **out);
/* Run a shell command, capture stdout+stderr into *out (malloc'd, may be NULL); returns the
 * exit status (0..255) or -1. */
int tu_run(const char *cmd, char **out);
/* Path of the ncsim executable (NCSIM_BINARY, set by ctest). */
const char *tu_ncsim(void);
/* Relative closeness: |a-b| <= atol + rtol*|b| (NaN equal to NaN). */
int tu_close(double a, double b, double rtol, double atol);
/* "dir/name" in one of four rotating static buffers (a call may use up to four at once). */
const char *tu_join(const char *dir, const char *name);
/* Run a printf-formatted shell command; when it fails, print it with its output. Returns the
 * exit status (as tu_run). */
int tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Assemble NCA text with the default options, as file `name` (NULL: "t.nca"); NULL on failure,
 * after printing the diagnostics. */
struct isa_program *tu_assemble(const char *text, const char *name);
/* A view from (stride, count) pairs, outermost first (an HBM view has one partition). */
isa_view_t tu_view(isa_space_t space, isa_dtype_t dt, unsigned pstart, unsigned pcount,
                   uint64_t offset, unsigned nd, const int64_t *strides, const uint32_t *counts);
/* Load architecture preset `name` into *a; 0, or -1 after printing why (a cmocka setup's
 * return value). */
int tu_load_arch(const char *name, mdl_arch_t *a);

#endif
