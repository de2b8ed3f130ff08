/*
 * dump.h -- `ncsim run --dump NAME[@CORE]=FILE.npy [--dump-at LINE]`: any declared tensor
 * (HBM inputs, outputs, scratch; SBUF and PSUM of a core) written to a .npy file at the end
 * of the run, or when the first instruction of source line LINE that writes memory has taken
 * effect
 * (docs/explain.md).
 */
#ifndef NCSIM_CLI_DUMP_H
#define NCSIM_CLI_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "ncsim.h"

#define CLI_MAX_DUMPS 64

typedef struct cli_dump {
    const char *name;      /* NAME[0..name_len) */
    size_t name_len;
    uint32_t core;         /* for SBUF/PSUM tensors (default 0) */
    int have_core;         /* @CORE given */
    const char *path;      /* FILE.npy */
    int tensor;            /* resolved by cli_dumps_resolve */
    int done;
} cli_dump_t;

typedef struct cli_dumps {
    cli_dump_t d[CLI_MAX_DUMPS];
    int n;
    uint32_t at_line;      /* --dump-at LINE; 0: at the end of the run */
    const ncsim_program_t *prog;
    struct cli_outputs *outputs; /* where files go first (cli/outputs.h); NULL: directly */
    int failed;            /* a dump could not be written (message printed) */
    int io_error;
} cli_dumps_t;

/* One --dump argument, NAME[@CORE]=FILE.npy, into the list: the one place --dump is parsed.
 * -1 with a message in err when it is malformed or the list is full. */
int cli_dump_parse(cli_dumps_t *ds, const char *arg, char *err, size_t errlen);
/* --dump-at LINE. -1 with a message when LINE is not a positive integer. */
int cli_dump_parse_line(cli_dumps_t *ds, const char *arg, char *err, size_t errlen);
/* Find the tensors; check --dump-at's line runs an instruction. -1 with a message. */
int cli_dumps_resolve(cli_dumps_t *ds, const ncsim_program_t *prog, int timing_only, char *err,
                      size_t errlen);
/* --dump-at: the simulator calls back into the dumps at the line (ncsim_sim_set_line_hook). */
ncsim_status_t cli_dumps_hook(cli_dumps_t *ds, ncsim_sim_t *s);
/* Register every dump file with the command's outputs (validated before the run, written
 * under a temporary name, renamed into place at the end). -1 when one is refused. */
int cli_dumps_register(cli_dumps_t *ds, struct cli_outputs *outputs);
/* After the run: the end-of-run dumps (or, with --dump-at, report the ones never taken).
 * Returns an exit code: 0, 2 (line never reached), 3 (I/O). */
int cli_dumps_finish(cli_dumps_t *ds, ncsim_sim_t *s);

#endif
