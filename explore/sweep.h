/*
 * sweep.h -- architecture sweeps (`ncsim sweep`, shared/spec/CLI.md, docs/exploration.md).
 *
 * A sweep spec (JSON) names a program, a base architecture, fixed overrides and a grid of
 * "section.key": [values]. Its points are the cartesian product of the grid, numbered in
 * row-major order of the grid as written: the first grid entry varies slowest, the last one
 * fastest (like nested loops in the order of the file). A grid entry whose name lists several
 * keys separated by commas ("system.chips,link.torus_x,link.torus_y") varies them together:
 * each of its values is an array with one element per key.
 *
 * Each point runs in-process (sim_create / sim_run) and leaves its result in
 * OUTDIR/point-I.json, written atomically (temporary file, then rename): the statistics JSON
 * of `ncsim run --stats` (with the resolved config under "arch_config") plus a "sweep" object
 * (index, parameters, status, the CSV numbers). A point whose file exists and was made by
 * the same spec and program (same fingerprint) is done: reruns skip it. The merge turns the
 * point files into one CSV, one row per point in point order, so the CSV does not depend on
 * how the points were run (one process, --jobs N workers, or the tasks of a Slurm array).
 */
#ifndef NCSIM_SIM_SWEEP_H
#define NCSIM_SIM_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "ncsim.h"

typedef struct sim_sweep sim_sweep_t;

/*
 * Read and check a spec. Relative paths in it (program, arch file, inputs) are relative to
 * the spec file's directory, as for "base" in architecture configs. Every grid value is
 * applied to the base config and every point is validated here, so a bad key, a bad value
 * or an invalid combination is reported before anything runs (NCSIM_USAGE; the message
 * names the spec file, the key and, for combinations, the point). NCSIM_IO when a file
 * cannot be read.
 */
ncsim_status_t sim_sweep_load(const char *spec_path, sim_sweep_t **out, char *err,
                              size_t errlen);
/* The same without validating the points: for `--index I`, which checks only its own
 * points (sim_sweep_check_points), so that a task of a huge array starts at once. */
ncsim_status_t sim_sweep_load_unchecked(const char *spec_path, sim_sweep_t **out, char *err,
                                        size_t errlen);
/* Validate points first..last (NCSIM_USAGE naming the first bad point and its values). */
ncsim_status_t sim_sweep_check_points(const sim_sweep_t *sw, uint64_t first, uint64_t last,
                                      char *err, size_t errlen);
void sim_sweep_free(sim_sweep_t *sw);

uint64_t sim_sweep_point_count(const sim_sweep_t *sw);
/* The varied keys in CSV column order (grid order, linked keys in their listed order). */
size_t sim_sweep_param_count(const sim_sweep_t *sw);
const char *sim_sweep_param_key(const sim_sweep_t *sw, size_t i);
/* 64-bit FNV-1a of the spec, program (and arch file) bytes, as 16 hex digits. */
const char *sim_sweep_fingerprint(const sim_sweep_t *sw);
/* The spec path made absolute, and the absolute program path. */
const char *sim_sweep_spec_path(const sim_sweep_t *sw);
const char *sim_sweep_program_path(const sim_sweep_t *sw);
/* Default output directory: NAME.sweep in the current directory, for spec NAME.json. */
void sim_sweep_default_out_dir(const sim_sweep_t *sw, char *buf, size_t buflen);

/* The values of the varied keys at point `index`, as its resolved and validated config holds
 * them (the text `ncsim arch --get` prints), in CSV column order joined by commas, into BUF
 * (truncated to BUFLEN). NCSIM_USAGE for a point that does not exist or is invalid. */
ncsim_status_t sim_sweep_point_values(const sim_sweep_t *sw, uint64_t index, char *buf,
                                      size_t buflen, char *err, size_t errlen);

/*
 * Assemble the program for every geometry (memory sizes) used by points first..last, once
 * each. Call before sim_sweep_run forks its workers so that they share the assembled
 * programs (copy-on-write) instead of assembling them again. Assembly errors are not
 * returned here: the points that need that program record them as their result.
 */
ncsim_status_t sim_sweep_prepare(sim_sweep_t *sw, uint64_t first, uint64_t last, char *err,
                                 size_t errlen);

/* Outcome of one point, as recorded in its file. */
typedef enum sim_sweep_point_status {
    SIM_SWEEP_POINT_OK,      /* ran to the end */
    SIM_SWEEP_POINT_FAILED,  /* recorded an error: does not fit, run-time error, deadlock */
    SIM_SWEEP_POINT_SKIPPED  /* already done by an earlier run (same fingerprint) */
} sim_sweep_point_status_t;

/*
 * Run point `index` in this process and write OUTDIR/point-INDEX.json atomically; unless
 * `force`, skip it when that file already holds a result of this sweep. A point that fails
 * (the program does not fit the config, a run-time error, a deadlock) is still a result:
 * its file records the error and *status says FAILED; the return value is NCSIM_OK. The
 * return value is an error only when no result could be recorded (NCSIM_IO, NCSIM_NOMEM).
 */
ncsim_status_t sim_sweep_run_point(sim_sweep_t *sw, uint64_t index, const char *out_dir,
                                   int force, sim_sweep_point_status_t *status, char *err,
                                   size_t errlen);

typedef enum sim_sweep_progress {
    SIM_SWEEP_PROGRESS_AUTO,   /* redrawn on a terminal, else a line every ~10 s */
    SIM_SWEEP_PROGRESS_ALWAYS,
    SIM_SWEEP_PROGRESS_NEVER
} sim_sweep_progress_t;

typedef struct sim_sweep_run_options {
    const char *out_dir;
    unsigned jobs;            /* worker processes; 0 or 1: run in this process */
    int force;                /* rerun points already done */
    sim_sweep_progress_t progress;
} sim_sweep_run_options_t;

typedef struct sim_sweep_summary {
    uint64_t ran, skipped, failed, lost; /* lost: a worker died before recording it */
    double seconds;
} sim_sweep_summary_t;

/*
 * Run points first..last (inclusive). With jobs > 1, fork that many workers after
 * sim_sweep_prepare; the parent hands out point indices one at a time (so uneven points
 * balance) and collects the workers' reports. Output does not depend on `jobs`: every result
 * goes to its own point file. Per-point failures are counted in the summary, not returned.
 * Returns NCSIM_IO / NCSIM_NOMEM when results could not be recorded, NCSIM_INTERNAL when a
 * worker died (summary.lost).
 */
ncsim_status_t sim_sweep_run(sim_sweep_t *sw, uint64_t first, uint64_t last,
                             const sim_sweep_run_options_t *opt, sim_sweep_summary_t *summary,
                             char *err, size_t errlen);

typedef struct sim_sweep_merge_summary {
    uint64_t points, ok, failed, missing;
} sim_sweep_merge_summary_t;

/*
 * Merge OUTDIR/point-*.json into one CSV (written atomically to csv_path, "-" for stdout):
 * a header, then one row per point in point order. Columns: the varied keys (values as the
 * resolved config holds them), total_ns, mfu, pe_util, act_util, dve_util, pool_util,
 * sp_util, cc_util (busy time / (cores used x total time)), dma_util (time with a transfer
 * moving / total, averaged over the cores used), hbm_read_bytes, hbm_write_bytes, status
 * ("ok" or "error"). Missing or stale point files: NCSIM_IO, the message lists the first
 * ones, and no CSV is written. Failed points give a row with empty numbers (summary.failed).
 */
ncsim_status_t sim_sweep_merge(const sim_sweep_t *sw, const char *out_dir, const char *csv_path,
                               sim_sweep_merge_summary_t *summary, char *err, size_t errlen);

typedef struct sim_sweep_slurm_options {
    const char *ncsim_path;      /* absolute path of the ncsim executable */
    const char *out_dir;         /* absolute */
    uint64_t points_per_task;    /* 0: as few as keep the array within 1000 tasks */
    const char *const *sbatch;   /* extra "#SBATCH" options, e.g. "--partition=debug" */
    size_t nsbatch;
    const char *csv_path;        /* where the merge writes (NULL: OUTDIR/results.csv) */
} sim_sweep_slurm_options_t;

/*
 * A bash script for Slurm (malloc'd). `sbatch SCRIPT` submits the array (task t runs points
 * t*K .. t*K+K-1 with --index); `bash SCRIPT` submits the array and then a merge job with
 * --dependency=afterok on it, and prints both job ids. Every path, name and option is quoted
 * by one function; a value that cannot be quoted safely (a control character such as a line
 * break, a '%' in the output folder, an --sbatch value that is not an option) is refused:
 * NULL and a message naming it in ERR (also NULL and "out of memory").
 */
char *sim_sweep_slurm_script(const sim_sweep_t *sw, const sim_sweep_slurm_options_t *opt,
                             char *err, size_t errlen);

/* `ncsim sweep` (cli/cmd_sweep.c) */
int cli_sweep(int argc, char **argv);

#endif
