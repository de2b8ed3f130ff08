/*
 * load.h -- read a program from a file: NCA text is assembled, .ncx binaries are loaded and
 * checked. Used by every subcommand that takes a PROG argument.
 */
#ifndef NCSIM_SIM_LOAD_H
#define NCSIM_SIM_LOAD_H

#include "diag.h"
#include "isa.h"

/* Reads `path` ("-" is stdin), detects text or binary, assembles or loads it against the
 * geometry. Diagnostics go to diag. Returns NCSIM_OK, NCSIM_IO (cannot read),
 * NCSIM_ASSEMBLY, NCSIM_FORMAT or NCSIM_NOMEM. `arch_lookup` resolves `.arch NAME`. */
ncsim_status_t sim_load_program(const char *path, const isa_geometry_t *geometry,
                                int (*arch_lookup)(void *, const char *, isa_geometry_t *),
                                void *arch_ctx, isa_program_t **out, isa_diag_t *diag);

/* Read a whole file into memory ("-" is stdin). NULL on error (errno set). */
/* Reads at most SIM_MAX_READ_BYTES (NULL with errno EFBIG beyond: /dev/zero must not be read
 * until memory runs out). */
#define SIM_MAX_READ_BYTES (1 << 30)
/* A .ncx from this size on is mapped rather than read (sim_load_program). */
#define SIM_MAP_MIN_BYTES (1 << 20)
/* Tests only: called by sim_load_program with `path` mapped and its read lease held,
 * before decoding it (NULL: nothing). */
extern void (*sim_load_mapped_hook)(const char *path);
char *sim_read_file(const char *path, size_t *len);
/* Write a whole file atomically (temporary file, then rename). 0 on success. */
int sim_write_file(const char *path, const void *data, size_t len);

#endif
