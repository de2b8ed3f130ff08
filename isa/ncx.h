/*
 * ncx.h -- the .ncx binary container (isa/FORMAT.md): writer and checking loader.
 */
#ifndef NCSIM_ISA_NCX_H
#define NCSIM_ISA_NCX_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "isa.h"

/* Serialise deterministically, in the current format (1.1). *buf is malloc'd. */
ncsim_status_t isa_ncx_write(const isa_program_t *prog, uint8_t **buf, size_t *len);

/* The same in format 1.`minor` (0: 1.0, every operand inline, for older readers; 1: 1.1). */
ncsim_status_t isa_ncx_write_version(const isa_program_t *prog, unsigned minor, uint8_t **buf,
                                     size_t *len);

/*
 * Parse and check a binary image. Every structural problem (magic, sentinel, version,
 * section bounds, counts, indices, enum values) and every static instruction check
 * (isa_check_program against `g`) is reported into diag with `file` as the name.
 * Returns NCSIM_OK, NCSIM_FORMAT or NCSIM_NOMEM. Never reads outside [buf, buf+len).
 */
ncsim_status_t isa_ncx_read(const uint8_t *buf, size_t len, const isa_geometry_t *g,
                            const char *file, isa_program_t **out, isa_diag_t *diag);

/* 1 when the buffer starts with the .ncx magic (to tell binaries from text). */
int isa_ncx_is_binary(const uint8_t *buf, size_t len);

#endif
