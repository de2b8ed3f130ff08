/*
 * cmd_sweep.c -- `ncsim sweep SPEC.json [options]` (shared/spec/CLI.md, docs/exploration.md):
 * run an architecture sweep here (--jobs N), one point or a range for a Slurm array task
 * (--index), merge the results into one CSV (--merge), print a Slurm script (--slurm), plot
 * one column against another (--plot ... --png FILE).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "outputs.h"
#include "sweep.h"
#include "sweep_plot.h"

/* ---- options: one row each (cli/options.h) -------------------------------------------------- */

typedef struct sweep_args {
    uint64_t jobs, first, last, per_task;
    int have_index, merge_only, force, list, slurm, quiet;
    const char *spec, *out_dir, *csv, *png;
    char *plot_text;
    const char *sbatch[64];
    size_t nsbatch;
    sim_sweep_progress_t progress;
} sweep_args_t;

static int parse_range(const char *s, uint64_t *first, uint64_t *last);
static long online_cpus(void);

static int opt_jobs(void *p, const char *name, const char *arg)
{
    sweep_args_t *a = p;
    (void)name;
    if (cli_parse_u64(arg, &a->jobs) || a->jobs > 4096) {
        fprintf(stderr, "ncsim sweep: --jobs wants a number of processes (0 to 4096), not '%s'\n",
                arg);
        return -1;
    }
    if (a->jobs == 0)
        a->jobs = (uint64_t)online_cpus();
    return 0;
}

static int opt_index(void *p, const char *name, const char *arg)
{
    sweep_args_t *a = p;
    (void)name;
    if (parse_range(arg, &a->first, &a->last)) {
        fprintf(stderr, "ncsim sweep: --index wants a point I or a range I-J, not '%s'\n", arg);
        return -1;
    }
    a->have_index = 1;
    return 0;
}

static int opt_flag(void *p, const char *name, const char *arg)
{
    sweep_args_t *a = p;
    (void)arg;
    int *flag = strcmp(name, "merge") == 0   ? &a->merge_only
                : strcmp(name, "force") == 0 ? &a->force
                : strcmp(name, "list") == 0  ? &a->list
                : strcmp(name, "slurm") == 0 ? &a->slurm
                                             : &a->quiet;
    *flag = 1;
    return 0;
}

static int opt_path(void *p, const char *name, const char *arg)
{
    sweep_args_t *a = p;
    if (strcmp(name, "out") == 0)
        a->out_dir = arg;
    else if (strcmp(name, "csv") == 0)
        a->csv = arg;
    else if (strcmp(name, "png") == 0)
        a->png = arg;
    else
        a->plot_text = (char *)arg;
    return 0;
}

static int opt_per_task(void *p, const char *name, const char *arg)
{
    sweep_args_t *a = p;
    (void)name;
    if (cli_parse_u64(arg, &a->per_task) || a->per_task == 0) {
        fprintf(stderr, "ncsim sweep: --points-per-task wants a positive number, not '%s'\n",
                arg);
        return -1;
    }
    return 0;
}

static int opt_sbatch(void *p, const char *name, const char *arg)
{
    sweep_args_t *a = p;
    (void)name;
    if (a->nsbatch == sizeof a->sbatch / sizeof *a->sbatch) {
        fputs("ncsim sweep: too many --sbatch options\n", stderr);
        return -1;
    }
    a->sbatch[a->nsbatch++] = arg;
    return 0;
}

static int opt_progress(void *p, const char *name, const char *arg)
{
    sweep_args_t *a = p;
    (void)name;
    static const char *const modes[] = {"auto", "always", "never"};
    static const sim_sweep_progress_t values[] = {
        SIM_SWEEP_PROGRESS_AUTO, SIM_SWEEP_PROGRESS_ALWAYS, SIM_SWEEP_PROGRESS_NEVER};
    for (int i = 0; i < 3; i++)
        if (strcmp(arg, modes[i]) == 0) {
            a->progress = values[i];
            return 0;
        }
    fputs("ncsim sweep: --progress wants auto, always or never\n", stderr);
    return -1;
}

static const cli_option_t sweep_options[] = {
    {"jobs", 'j', "N", opt_jobs,
     "run N points at a time in worker processes (default 1; 0: one per\n"
     "CPU). The results do not depend on N."},
    {"index", 0, "I|I-J", opt_index,
     "run only point I (or points I..J) and write its result; no merge.\n"
     "Without --index, $SLURM_ARRAY_TASK_ID (when set) is the point."},
    {"merge", 0, NULL, opt_flag, "only merge the point files into the CSV"},
    {"force", 0, NULL, opt_flag, "rerun points that are already done"},
    {"out", 0, "DIR", opt_path, "output directory (default: NAME.sweep for SPEC NAME.json)"},
    {"csv", 0, "FILE", opt_path, "merged CSV (default OUT/results.csv; '-' for stdout)"},
    {"list", 0, NULL, opt_flag, "print the points (index and parameters) as CSV and exit"},
    {"slurm", 0, NULL, opt_flag,
     "print a Slurm script: `sbatch` it to run the points as an array\n"
     "job, or `bash` it to submit the array and a merge job after it"},
    {"points-per-task", 0, "K", opt_per_task,
     "with --slurm: points per array task (default: 1, or more to keep\n"
     "the array within 1000 tasks)"},
    {"sbatch", 0, "OPTION", opt_sbatch,
     "with --slurm: extra #SBATCH option, e.g. --sbatch=--partition=cpu\n"
     "(repeatable)"},
    {"plot", 0, "X=KEY,Y=COLUMN[,logx][,logy]", opt_path,
     "after merging, plot COLUMN against KEY..."},
    {"png", 0, "FILE", opt_path, "...into this PNG file"},
    {"progress", 0, "auto|always|never", opt_progress,
     "progress on stderr (auto: when it is a terminal)"},
    {"quiet", 'q', NULL, opt_flag, "no progress, no summary"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t sweep_command = {
    "sweep",
    "usage: ncsim sweep SPEC.json [options]\n"
    "\n"
    "Run an architecture sweep: the program of SPEC on every point of its grid (the\n"
    "cartesian product; the first grid key varies slowest). Each point's statistics go to\n"
    "OUT/point-I.json (atomically; points already done are skipped on a rerun), then all\n"
    "points are merged into OUT/results.csv. The spec (docs/exploration.md):\n"
    "  { \"program\": \"kernels/gemm_a_tiled.nca\", \"arch\": \"trn1\", \"timing_only\": true,\n"
    "    \"set\": { \"dma.engines\": 16 },\n"
    "    \"grid\": { \"hbm.bandwidth_gbps\": [410, 820, 1640], \"pe.clock_ghz\": [1.4, 2.8] } }\n"
    "Paths in the spec are relative to the spec file.\n"
    "\n",
    sweep_options,
    22,
    "CSV columns: the swept keys, total_ns, mfu, pe_util, act_util, dve_util, pool_util,\n"
    "sp_util, cc_util, dma_util (busy time / (cores used x total time)), hbm_read_bytes,\n"
    "hbm_write_bytes, status (ok or error).\n"
    "exit codes: 0 success, 1 some points failed (their rows say error; the CSV is still\n"
    "written), 2 usage error or bad spec, 3 input/output error (e.g. points without a\n"
    "result at merge time), 4 internal error.\n",
    1,
    1,
    "expected one spec file",
};

static int parse_u64(const char *s, uint64_t *out)
{
    return cli_parse_u64(s, out);
}

static int parse_range(const char *s, uint64_t *first, uint64_t *last)
{
    const char *dash = strchr(s, '-');
    if (!dash)
        return parse_u64(s, first) ? -1 : (*last = *first, 0);
    char a[32];
    size_t n = (size_t)(dash - s);
    if (n == 0 || n >= sizeof a)
        return -1;
    memcpy(a, s, n);
    a[n] = 0;
    if (parse_u64(a, first) || parse_u64(dash + 1, last) || *last < *first)
        return -1;
    return 0;
}

static int list_points(const sim_sweep_t *sw)
{
    printf("index");
    for (size_t k = 0; k < sim_sweep_param_count(sw); k++)
        printf(",%s", sim_sweep_param_key(sw, k));
    putchar('\n');
    for (uint64_t i = 0; i < sim_sweep_point_count(sw); i++) {
        char values[8192], err[1024];
        if (sim_sweep_point_values(sw, i, values, sizeof values, err, sizeof err) != NCSIM_OK) {
            fprintf(stderr, "ncsim sweep: %s\n", err);
            return 2;
        }
        printf("%" PRIu64 "%s%s\n", i, sim_sweep_param_count(sw) ? "," : "", values);
    }
    return 0;
}

static long online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* The combinations of options that cannot work. 0 or 2. */
static int check_combinations(const sweep_args_t *a)
{
    if (a->have_index + a->merge_only + a->list + a->slurm > 1) {
        fputs("ncsim sweep: --index, --merge, --list and --slurm exclude one another\n", stderr);
        return 2;
    }
    if (!a->plot_text != !a->png) {
        fputs("ncsim sweep: --plot and --png go together\n", stderr);
        return 2;
    }
    if (a->plot_text && (a->have_index || a->list || a->slurm)) {
        fputs("ncsim sweep: --plot draws the merged results: use it with a full run or "
              "--merge\n",
              stderr);
        return 2;
    }
    if ((a->per_task || a->nsbatch) && !a->slurm) {
        fputs("ncsim sweep: --points-per-task and --sbatch go with --slurm\n", stderr);
        return 2;
    }
    return 0;
}

/* --slurm: the script for an array job, with absolute paths (the tasks run wherever the
 * cluster puts them). `csv` is NULL for the default. The exit code. */
static int sweep_slurm(const sweep_args_t *a, const sim_sweep_t *sw, const char *dir,
                       const char *csv)
{
    int created = mkdir(dir, 0777) == 0;
    if (!created && errno != EEXIST) {
        fprintf(stderr, "ncsim sweep: cannot create %s: %s\n", dir, strerror(errno));
        return 3;
    }
    char abs_dir[PATH_MAX], exe[PATH_MAX], abs_csv[PATH_MAX];
    if (!realpath(dir, abs_dir) || !realpath("/proc/self/exe", exe)) {
        fprintf(stderr, "ncsim sweep: cannot resolve %s: %s\n", dir, strerror(errno));
        return 3;
    }
    const char *csv_abs = NULL;
    if (csv) {
        if (csv[0] == '/' || strcmp(csv, "-") == 0) {
            csv_abs = csv;
        } else {
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof cwd)) {
                fprintf(stderr, "ncsim sweep: getcwd: %s\n", strerror(errno));
                return 3;
            }
            snprintf(abs_csv, sizeof abs_csv, "%.2000s/%.2000s", cwd, csv);
            csv_abs = abs_csv;
        }
    }
    sim_sweep_slurm_options_t so = {exe, abs_dir, a->per_task, a->sbatch, a->nsbatch, csv_abs};
    char serr[1024];
    char *script = sim_sweep_slurm_script(sw, &so, serr, sizeof serr);
    if (!script) {
        fprintf(stderr, "ncsim sweep: --slurm: %s\n", serr);
        if (created) /* refused: leave no folder with that name behind */
            rmdir(dir);
        return strcmp(serr, "out of memory") == 0 ? 4 : 2;
    }
    fputs(script, stdout);
    free(script);
    return 0;
}

/* Run the points (all, or --index's) into DIR. The exit code, or -1 to go on to the merge. */
static int sweep_points(const sweep_args_t *a, sim_sweep_t *sw, const char *dir)
{
    char err[8192];
    uint64_t n = sim_sweep_point_count(sw), first = 0, last = n - 1;
    if (a->have_index) {
        first = a->first;
        last = a->last;
        if (last >= n) {
            fprintf(stderr, "ncsim sweep: --index %" PRIu64 "%s: the sweep has %" PRIu64
                            " points (0 to %" PRIu64 ")\n",
                    last, first == last ? "" : " (end of range)", n, n - 1);
            return 2;
        }
        ncsim_status_t st = sim_sweep_check_points(sw, first, last, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim sweep: %s\n", err);
            return ncsim_status_exit_code(st);
        }
    }
    sim_sweep_run_options_t ro = {dir, (unsigned)a->jobs, a->force, a->progress};
    sim_sweep_summary_t sum;
    ncsim_status_t st = sim_sweep_run(sw, first, last, &ro, &sum, err, sizeof err);
    if (!a->quiet)
        fprintf(stderr, "ncsim sweep: %" PRIu64 " point%s run, %" PRIu64 " already done, %" PRIu64
                        " failed, in %.2f s (%s)\n",
                sum.ran, sum.ran == 1 ? "" : "s", sum.skipped, sum.failed, sum.seconds, dir);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim sweep: %s\n", err);
        return ncsim_status_exit_code(st);
    }
    /* a recorded failure is a result: the merge reports it */
    return a->have_index ? 0 : -1;
}

/* Merge the point files of DIR into CSV, then --plot. The exit code; *csv_written and
 * *png_written say what is this run's. */
static int sweep_merge(const sweep_args_t *a, const sim_sweep_t *sw, const char *dir,
                       const char *csv, const sim_plot_options_t *plot, int *csv_written,
                       int *png_written)
{
    char err[8192];
    sim_sweep_merge_summary_t ms;
    ncsim_status_t st = sim_sweep_merge(sw, dir, csv, &ms, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim sweep: %s\n", err);
        return ncsim_status_exit_code(st);
    }
    *csv_written = 1;
    /* failures are said even with -q: an exit status of 1 alone explains nothing */
    if (!a->quiet || ms.failed)
        fprintf(stderr, "ncsim sweep: %" PRIu64 " points merged into %s (%" PRIu64 " ok, %" PRIu64
                        " failed%s)\n",
                ms.points, strcmp(csv, "-") == 0 ? "stdout" : csv, ms.ok, ms.failed,
                ms.failed ? ": their rows have status error, and each point's file in the "
                            "output directory its message" : "");
    int rc = ms.failed ? 1 : 0;
    if (!a->plot_text)
        return rc;
    if (strcmp(csv, "-") == 0) {
        fputs("ncsim sweep: --plot reads the merged CSV: give --csv a file\n", stderr);
        return 2;
    }
    st = sim_plot_csv(csv, plot, a->png, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim sweep: --plot: %s\n", err);
        return ncsim_status_exit_code(st);
    }
    *png_written = 1;
    if (!a->quiet)
        fprintf(stderr, "ncsim sweep: plot of %s against %s in %s\n", plot->y, plot->x, a->png);
    return rc;
}

/* Run and merge (or one of them). From here a merge follows (unless --index): the CSV and
 * the plot an earlier run left under the requested names are not this run's results. A
 * signal removes them (cli_output_guard), and so does a run or merge that fails before rewriting
 * them. */
static int sweep_run_merge(const sweep_args_t *a, sim_sweep_t *sw, const char *dir,
                           const char *csv, const sim_plot_options_t *plot)
{
    int pend_csv = -1, pend_png = -1, csv_written = 0, png_written = 0;
    if (!a->have_index) {
        pend_csv = cli_output_guard(csv);
        if (a->png)
            pend_png = cli_output_guard(a->png);
    }
    int rc = a->merge_only ? -1 : sweep_points(a, sw, dir);
    if (rc < 0)
        rc = sweep_merge(a, sw, dir, csv, plot, &csv_written, &png_written);
    if (pend_csv >= 0 && !csv_written)
        unlink(csv);
    if (pend_png >= 0 && !png_written)
        unlink(a->png);
    cli_output_unguard(pend_csv);
    cli_output_unguard(pend_png);
    return rc;
}

int cli_sweep(int argc, char **argv)
{
    sweep_args_t a = {.jobs = 1, .progress = SIM_SWEEP_PROGRESS_AUTO};
    int first_operand;
    int rc = cli_parse(&sweep_command, argc, argv, &a, &first_operand);
    if (rc >= 0)
        return rc;
    a.spec = argv[first_operand];
    if (a.quiet)
        a.progress = SIM_SWEEP_PROGRESS_NEVER;
    if ((rc = check_combinations(&a)))
        return rc;
    sim_plot_options_t plot;
    char err[8192];
    if (a.plot_text && sim_plot_parse(a.plot_text, &plot, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "ncsim sweep: --plot: %s\n", err);
        return 2;
    }
    /* a task of a Slurm array runs its own point */
    const char *task = getenv("SLURM_ARRAY_TASK_ID");
    if (!a.have_index && !a.merge_only && !a.list && !a.slurm && task && *task) {
        if (parse_u64(task, &a.first)) {
            fprintf(stderr, "ncsim sweep: SLURM_ARRAY_TASK_ID is not a number: '%s'\n", task);
            return 2;
        }
        a.last = a.first;
        a.have_index = 1;
    }
    sim_sweep_t *sw = NULL;
    /* with --index, only the task's own points are validated (sweep_points): a task of a
     * sweep of 10^9 points must not check them all before its own */
    ncsim_status_t st = a.have_index && !a.merge_only && !a.list && !a.slurm
                            ? sim_sweep_load_unchecked(a.spec, &sw, err, sizeof err)
                            : sim_sweep_load(a.spec, &sw, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim sweep: %s\n", err);
        return ncsim_status_exit_code(st);
    }
    char dir[PATH_MAX], csv_buf[PATH_MAX + 16];
    if (a.out_dir)
        snprintf(dir, sizeof dir, "%s", a.out_dir);
    else
        sim_sweep_default_out_dir(sw, dir, sizeof dir);
    snprintf(csv_buf, sizeof csv_buf, "%s/results.csv", dir);
    if (a.list)
        rc = list_points(sw);
    else if (a.slurm)
        rc = sweep_slurm(&a, sw, dir, a.csv);
    else
        rc = sweep_run_merge(&a, sw, dir, a.csv ? a.csv : csv_buf, &plot);
    sim_sweep_free(sw);
    return rc;
}
