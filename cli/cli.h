/*
 * cli.h -- pieces shared by the ncsim subcommands.
 */
#ifndef NCSIM_SIM_CLI_H
#define NCSIM_SIM_CLI_H

#include <stddef.h>

#include "ncsim.h"

int cli_exit(ncsim_status_t st);

/* PROG and its architecture as `ncsim run` and `ncsim check` resolve them, through the public
 * API: --arch (else the program's .arch, else trn1) with the --set overrides, validated.
 * Prints the diagnostics or "ncsim CMD: message"; 0 or the exit code. */
int cli_load(const char *cmd, const char *path, const char *arch_name, const char *const *sets,
             int nsets, ncsim_program_t **prog, ncsim_arch_t **arch);
/* Index (and description) of the HBM tensor named name[0..len), or -1. */
int cli_find_hbm_tensor(const ncsim_program_t *prog, const char *name, size_t len,
                        ncsim_tensor_info_t *info);
/* cli/escape.c: printable text only. cli_escape_stderr replaces stderr by a stream that
 * writes control bytes and invalid UTF-8 as \xNN; cli_escape returns an escaped copy
 * (malloc'd, NULL when out of memory); cli_escape_into escapes n bytes into out (cap bytes,
 * NUL-terminated), stopping early (and saying how far in *consumed) before a UTF-8 sequence
 * cut at the end when consumed is not NULL. */
void cli_escape_stderr(void);
char *cli_escape(const char *s);
size_t cli_escape_into(const char *in, size_t n, char *out, size_t cap, int terminal,
                       size_t *consumed);

/* ncsim run (cli/cmd_run.c) */
int cli_run(int argc, char **argv);
/* ncsim report (cli/cmd_report.c) */
int cli_report(int argc, char **argv);
/* A statistics file or a trace into a report (report.h), told apart by content. */
struct trc_report;
ncsim_status_t cli_report_load(const char *path, struct trc_report *rep, char *err,
                               size_t errlen);
/* ncsim diff (cli/cmd_diff.c) */
int cli_diff(int argc, char **argv);
/* ncsim viz (cmd_viz.c; without the viewer built, a message and exit 2) */
int cli_viz(int argc, char **argv);
/* ncsim check (cli/cmd_check.c) */
int cli_check(int argc, char **argv);
/* ncsim validate, ncsim fit (cli/cmd_validate.c) */
int cli_validate(int argc, char **argv);
int cli_fit(int argc, char **argv);

#endif
