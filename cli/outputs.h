/*
 * outputs.h -- validated, atomic output files for the ncsim commands (cli/outputs.c).
 *
 * Use: cli_outputs_add every file the command will write (`-` is stdout and is written
 * directly), cli_outputs_validate before any long work (exit 3 when it fails), write each
 * file to cli_outputs_path(path) and cli_outputs_mark_written it, then cli_outputs_commit on
 * success or cli_outputs_abort on failure (removes the targets), then cli_outputs_free.
 * From cli_outputs_validate to the commit, a signal that ends the process (SIGINT, SIGTERM,
 * SIGHUP...) removes the temporaries and the targets too (isa_file_pending_add), so neither a
 * temporary nor an output of an earlier run is left under the requested names.
 */
#ifndef NCSIM_CLI_OUTPUTS_H
#define NCSIM_CLI_OUTPUTS_H

#include <stddef.h>
#include <stdio.h>

#define CLI_MAX_OUTPUTS 520

typedef struct cli_output {
    char *path;       /* the target */
    char *tmp;        /* temporary file beside it, once validated */
    const char *what; /* "--out", "--stats", ... for messages */
    int is_stdout;
    int written;
    int keep; /* also an input of the command: never removed */
    int direct; /* an existing device, FIFO or socket (/dev/null): written where it is, never
                 * replaced by a rename nor removed */
    int pending_tmp, pending_target; /* entries in the list a signal removes (isa/file.h) */
} cli_output_t;

typedef struct cli_outputs {
    const char *cmd;
    int n, validated;
    cli_output_t v[CLI_MAX_OUTPUTS];
} cli_outputs_t;

void cli_outputs_init(cli_outputs_t *o, const char *cmd);
int cli_outputs_add(cli_outputs_t *o, const char *path, const char *what);
int cli_outputs_validate(cli_outputs_t *o);
const char *cli_outputs_path(const cli_outputs_t *o, const char *path);
/* MSG with every temporary's name replaced by its target's (a writer's message names the file
 * it wrote, which the user never asked for); into BUF, which is returned. */
const char *cli_outputs_message(const cli_outputs_t *o, const char *msg, char *buf, size_t cap);
/* A file the command reads: an output naming it is not removed when the command fails. */
void cli_outputs_protect(cli_outputs_t *o, const char *path);
void cli_outputs_mark_written(cli_outputs_t *o, const char *path);
int cli_outputs_commit(cli_outputs_t *o);
void cli_outputs_abort(cli_outputs_t *o);
void cli_outputs_free(cli_outputs_t *o);

/*
 * The one output file of a command (`-o` of asm, dis, report and diff; `-` is stdout), handled
 * as `run` handles its outputs: checked before the work, written under a temporary renamed
 * into place, and, when the command fails or a signal ends it, no file of an earlier run is
 * left under the name (unless it is also an input: `input`, `input2`, may be NULL).
 * cli_output_begin: 0 or the exit code (2 when it cannot be registered, 3 when the place
 * cannot be written). Then either cli_output_write (the whole text at once) or
 * cli_output_open / cli_output_close (a stream; stdout for `-`), and cli_output_end with the
 * command's exit code: 0 puts the file in place, anything else removes it. An exit code of 1
 * (the command's verdict on a valid result, e.g. `diff --fail-if-slower`) keeps the output
 * when `keep_on_1` was given to cli_output_end.
 */
int cli_output_begin(cli_outputs_t *o, const char *cmd, const char *out, const char *input,
                     const char *input2);
int cli_output_write(cli_outputs_t *o, const char *out, const void *data, size_t len);
FILE *cli_output_open(cli_outputs_t *o, const char *out);
int cli_output_close(cli_outputs_t *o, const char *out, FILE *f);
int cli_output_end(cli_outputs_t *o, int rc);
int cli_output_end_keep(cli_outputs_t *o, int rc, int keep_on_1);

/*
 * A file a command will write later through the library (sweep's merged CSV and plot, which
 * ncsim_write_file puts in place): from cli_output_guard until cli_output_unguard, a signal
 * that ends the process removes it, so an earlier run's file is not left under the name as if
 * it were this run's. Returns a handle, or -1 when there is nothing to guard (`-`, an existing
 * device or FIFO such as /dev/null, or no room in the list); cli_output_unguard(-1) does
 * nothing. Whether to remove it on a failure is the caller's call (it knows what it wrote).
 */
int cli_output_guard(const char *path);
void cli_output_unguard(int handle);

#endif
