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

#endif
