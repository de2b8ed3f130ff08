/*
 * cli.h -- pieces shared by the ncsim subcommands.
 */
#ifndef NCSIM_SIM_CLI_H
#define NCSIM_SIM_CLI_H

#include <stddef.h>

#include "diag.h"
#include "isa.h"
#include "ncsim.h"

int cli_print_diag(const isa_diag_t *d);
int cli_arch_lookup(void *ctx, const char *name, isa_geometry_t *g);
int cli_exit(ncsim_status_t st);
int cli_geometry(const char *arch_name, isa_geometry_t *g, char *err, size_t errlen);

/* PROG and its architecture as `ncsim run` and `ncsim check` resolve them, through the public
 * API: --arch (else the program's .arch, else trn1) with the --set overrides, validated.
 * Prints the diagnostics or "ncsim CMD: message"; 0 or the exit code. */
int cli_load(const char *cmd, const char *path, const char *arch_name, const char *const *sets,
             int nsets, ncsim_program_t **prog, ncsim_arch_t **arch);
/* Index (and description) of the HBM tensor named name[0..len), or -1. */
int cli_find_hbm_tensor(const ncsim_program_t *prog, const char *name, size_t len,
                        ncsim_tensor_info_t *info);

/* ncsim run (cli/cmd_run.c) */
int cli_run(int argc, char **argv);
/* ncsim report (cli/cmd_report.c) */
int cli_report(int argc, char **argv);
/* ncsim check (cli/cmd_check.c) */
int cli_check(int argc, char **argv);

#endif
