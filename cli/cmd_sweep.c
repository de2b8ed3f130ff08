/*
 * cmd_sweep.c -- `ncsim sweep SPEC.json [options]` (shared/spec/CLI.md, docs/exploration.md):
 * run an architecture sweep here (--jobs N), one point or a range for a Slurm array task
 * (--index), merge the results into one CSV (--merge), print a Slurm script (--slurm), plot
 * one column against another (--plot ... --png FILE).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"
#include "file.h"
#include "sweep.h"
#include "sweep_plot.h"

static const char usage_sweep[] =
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
    "\n"
    "  -j, --jobs N        run N points at a time in worker processes (default 1; 0: one per\n"
    "                      CPU). The results do not depend on N.\n"
    "  --index I|I-J       run only point I (or points I..J) and write its result; no merge.\n"
    "                      Without --index, $SLURM_ARRAY_TASK_ID (when set) is the point.\n"
    "  --merge             only merge the point files into the CSV\n"
    "  --force             rerun points that are already done\n"
    "  --out DIR           output directory (default: NAME.sweep for SPEC NAME.json)\n"
    "  --csv FILE          merged CSV (default OUT/results.csv; '-' for stdout)\n"
    "  --list              print the points (index and parameters) as CSV and exit\n"
    "  --slurm             print a Slurm script: `sbatch` it to run the points as an array\n"
    "                      job, or `bash` it to submit the array and a merge job after it\n"
    "  --points-per-task K with --slurm: points per array task (default: 1, or more to keep\n"
    "                      the array within 1000 tasks)\n"
    "  --sbatch OPTION     with --slurm: extra #SBATCH option, e.g. --sbatch=--partition=cpu\n"
    "                      (repeatable)\n"
    "  --plot X=KEY,Y=COLUMN[,logx][,logy]   after merging, plot COLUMN against KEY...\n"
    "  --png FILE          ...into this PNG file\n"
    "  --progress auto|always|never   progress on stderr (auto: when it is a terminal)\n"
    "  -q, --quiet         no progress, no summary\n"
    "CSV columns: the swept keys, total_ns, mfu, pe_util, act_util, dve_util, pool_util,\n"
    "sp_util, cc_util, dma_util (busy time / (cores used x total time)), hbm_read_bytes,\n"
    "hbm_write_bytes, status (ok or error).\n"
    "exit codes: 0 success, 1 some points failed (their rows say error; the CSV is still\n"
    "written), 2 usage error or bad spec, 3 input/output error (e.g. points without a\n"
    "result at merge time), 4 internal error.\n";

static int parse_u64(const char *s, uint64_t *out)
{
    if (!*s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
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
        mdl_arch_t a;
        char err[1024];
        if (sim_sweep_point_arch(sw, i, &a, err, sizeof err) != NCSIM_OK) {
            fprintf(stderr, "ncsim sweep: %s\n", err);
            return 2;
        }
        printf("%" PRIu64, i);
        for (size_t k = 0; k < sim_sweep_param_count(sw); k++) {
            char v[128];
            mdl_arch_get(&a, sim_sweep_param_key(sw, k), v, sizeof v);
            printf(",%s", v);
        }
        putchar('\n');
    }
    return 0;
}

static long online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

int cli_sweep(int argc, char **argv)
{
    enum { O_INDEX = 256, O_MERGE, O_FORCE, O_OUT, O_CSV, O_LIST, O_SLURM, O_PER_TASK, O_SBATCH,
           O_PLOT, O_PNG, O_PROGRESS };
    static const struct option opts[] = {{"jobs", required_argument, 0, 'j'},
                                         {"index", required_argument, 0, O_INDEX},
                                         {"merge", no_argument, 0, O_MERGE},
                                         {"force", no_argument, 0, O_FORCE},
                                         {"out", required_argument, 0, O_OUT},
                                         {"csv", required_argument, 0, O_CSV},
                                         {"list", no_argument, 0, O_LIST},
                                         {"slurm", no_argument, 0, O_SLURM},
                                         {"points-per-task", required_argument, 0, O_PER_TASK},
                                         {"sbatch", required_argument, 0, O_SBATCH},
                                         {"plot", required_argument, 0, O_PLOT},
                                         {"png", required_argument, 0, O_PNG},
                                         {"progress", required_argument, 0, O_PROGRESS},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    uint64_t jobs = 1, first = 0, last = 0, per_task = 0;
    int have_index = 0, merge_only = 0, force = 0, list = 0, slurm = 0, quiet = 0;
    const char *out_dir = NULL, *csv = NULL, *png = NULL;
    char *plot_text = NULL;
    const char *sbatch[64];
    size_t nsbatch = 0;
    sim_sweep_progress_t progress = SIM_SWEEP_PROGRESS_AUTO;
    /* the merged CSV and plot of an earlier run, listed for removal until rewritten */
    int pend_csv = -1, pend_png = -1, csv_written = 0, png_written = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "j:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            if (parse_u64(optarg, &jobs) || jobs > 4096) {
                fprintf(stderr, "ncsim sweep: --jobs wants a number of processes (0 to 4096), "
                                "not '%s'\n",
                        optarg);
                return 2;
            }
            if (jobs == 0)
                jobs = (uint64_t)online_cpus();
            break;
        case O_INDEX:
            if (parse_range(optarg, &first, &last)) {
                fprintf(stderr, "ncsim sweep: --index wants a point I or a range I-J, not '%s'\n",
                        optarg);
                return 2;
            }
            have_index = 1;
            break;
        case O_MERGE: merge_only = 1; break;
        case O_FORCE: force = 1; break;
        case O_OUT: out_dir = optarg; break;
        case O_CSV: csv = optarg; break;
        case O_LIST: list = 1; break;
        case O_SLURM: slurm = 1; break;
        case O_PER_TASK:
            if (parse_u64(optarg, &per_task) || per_task == 0) {
                fprintf(stderr, "ncsim sweep: --points-per-task wants a positive number, not "
                                "'%s'\n",
                        optarg);
                return 2;
            }
            break;
        case O_SBATCH:
            if (nsbatch == sizeof sbatch / sizeof *sbatch) {
                fputs("ncsim sweep: too many --sbatch options\n", stderr);
                return 2;
            }
            sbatch[nsbatch++] = optarg;
            break;
        case O_PLOT: plot_text = optarg; break;
        case O_PNG: png = optarg; break;
        case O_PROGRESS:
            if (strcmp(optarg, "auto") == 0)
                progress = SIM_SWEEP_PROGRESS_AUTO;
            else if (strcmp(optarg, "always") == 0)
                progress = SIM_SWEEP_PROGRESS_ALWAYS;
            else if (strcmp(optarg, "never") == 0)
                progress = SIM_SWEEP_PROGRESS_NEVER;
            else {
                fputs("ncsim sweep: --progress wants auto, always or never\n", stderr);
                return 2;
            }
            break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_sweep, stdout); return 0;
        default: fputs(usage_sweep, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "ncsim sweep: expected one spec file\n%s", usage_sweep);
        return 2;
    }
    if (quiet)
        progress = SIM_SWEEP_PROGRESS_NEVER;
    if (have_index + merge_only + list + slurm > 1) {
        fputs("ncsim sweep: --index, --merge, --list and --slurm exclude one another\n", stderr);
        return 2;
    }
    if (!plot_text != !png) {
        fputs("ncsim sweep: --plot and --png go together\n", stderr);
        return 2;
    }
    if (plot_text && (have_index || list || slurm)) {
        fputs("ncsim sweep: --plot draws the merged results: use it with a full run or "
              "--merge\n",
              stderr);
        return 2;
    }
    if ((per_task || nsbatch) && !slurm) {
        fputs("ncsim sweep: --points-per-task and --sbatch go with --slurm\n", stderr);
        return 2;
    }
    sim_plot_options_t plot;
    char err[8192];
    if (plot_text && sim_plot_parse(plot_text, &plot, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "ncsim sweep: --plot: %s\n", err);
        return 2;
    }
    /* a task of a Slurm array runs its own point */
    const char *task = getenv("SLURM_ARRAY_TASK_ID");
    if (!have_index && !merge_only && !list && !slurm && task && *task) {
        if (parse_u64(task, &first)) {
            fprintf(stderr, "ncsim sweep: SLURM_ARRAY_TASK_ID is not a number: '%s'\n", task);
            return 2;
        }
        last = first;
        have_index = 1;
    }

    sim_sweep_t *sw = NULL;
    /* with --index, only the task's own points are validated (below): a task of a sweep of
     * 10^9 points must not check them all before its own */
    ncsim_status_t st = have_index && !merge_only && !list && !slurm
                            ? sim_sweep_load_unchecked(argv[optind], &sw, err, sizeof err)
                            : sim_sweep_load(argv[optind], &sw, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim sweep: %s\n", err);
        return ncsim_status_exit_code(st);
    }
    int rc = 0;
    char dir[PATH_MAX], csv_buf[PATH_MAX + 16];
    if (out_dir)
        snprintf(dir, sizeof dir, "%s", out_dir);
    else
        sim_sweep_default_out_dir(sw, dir, sizeof dir);
    if (!csv) {
        snprintf(csv_buf, sizeof csv_buf, "%s/results.csv", dir);
        csv = csv_buf;
    }
    uint64_t n = sim_sweep_point_count(sw);

    if (list) {
        rc = list_points(sw);
        goto out;
    }
    if (slurm) {
        /* absolute paths: the tasks run wherever the cluster puts them */
        int created = mkdir(dir, 0777) == 0;
        if (!created && errno != EEXIST) {
            fprintf(stderr, "ncsim sweep: cannot create %s: %s\n", dir, strerror(errno));
            rc = 3;
            goto out;
        }
        char abs_dir[PATH_MAX], exe[PATH_MAX], abs_csv[PATH_MAX];
        if (!realpath(dir, abs_dir) || !realpath("/proc/self/exe", exe)) {
            fprintf(stderr, "ncsim sweep: cannot resolve %s: %s\n", dir, strerror(errno));
            rc = 3;
            goto out;
        }
        const char *csv_abs = NULL;
        if (csv != csv_buf) {
            if (csv[0] == '/' || strcmp(csv, "-") == 0) {
                csv_abs = csv;
            } else {
                char cwd[PATH_MAX];
                if (!getcwd(cwd, sizeof cwd)) {
                    fprintf(stderr, "ncsim sweep: getcwd: %s\n", strerror(errno));
                    rc = 3;
                    goto out;
                }
                snprintf(abs_csv, sizeof abs_csv, "%.2000s/%.2000s", cwd, csv);
                csv_abs = abs_csv;
            }
        }
        sim_sweep_slurm_options_t so = {exe, abs_dir, per_task, sbatch, nsbatch, csv_abs};
        char serr[1024];
        char *script = sim_sweep_slurm_script(sw, &so, serr, sizeof serr);
        if (!script) {
            fprintf(stderr, "ncsim sweep: --slurm: %s\n", serr);
            if (created) /* refused: leave no folder with that name behind */
                rmdir(dir);
            rc = strcmp(serr, "out of memory") == 0 ? 4 : 2;
            goto out;
        }
        fputs(script, stdout);
        free(script);
        goto out;
    }
    /* From here a merge follows (unless --index): the CSV and the plot an earlier run left
     * under the requested names are not this run's results. A signal removes them
     * (isa/file.h), and so does a run or merge that fails before rewriting them. */
    if (!have_index) {
        if (strcmp(csv, "-") != 0 && !isa_file_is_special(csv))
            pend_csv = isa_file_pending_add(csv);
        if (png && !isa_file_is_special(png))
            pend_png = isa_file_pending_add(png);
    }
    if (!merge_only) {
        if (!have_index) {
            first = 0;
            last = n - 1;
        } else if (last >= n) {
            fprintf(stderr, "ncsim sweep: --index %" PRIu64 "%s: the sweep has %" PRIu64
                            " points (0 to %" PRIu64 ")\n",
                    last, first == last ? "" : " (end of range)", n, n - 1);
            rc = 2;
            goto out;
        }
        if (have_index && (st = sim_sweep_check_points(sw, first, last, err, sizeof err))) {
            fprintf(stderr, "ncsim sweep: %s\n", err);
            rc = ncsim_status_exit_code(st);
            goto out;
        }
        sim_sweep_run_options_t ro = {dir, (unsigned)jobs, force, progress};
        sim_sweep_summary_t sum;
        st = sim_sweep_run(sw, first, last, &ro, &sum, err, sizeof err);
        if (!quiet)
            fprintf(stderr, "ncsim sweep: %" PRIu64 " point%s run, %" PRIu64
                            " already done, %" PRIu64 " failed, in %.2f s (%s)\n",
                    sum.ran, sum.ran == 1 ? "" : "s", sum.skipped, sum.failed, sum.seconds, dir);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim sweep: %s\n", err);
            rc = ncsim_status_exit_code(st);
            goto out;
        }
        if (have_index)
            goto out; /* a recorded failure is a result: the merge reports it */
    }
    sim_sweep_merge_summary_t ms;
    st = sim_sweep_merge(sw, dir, csv, &ms, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim sweep: %s\n", err);
        rc = ncsim_status_exit_code(st);
        goto out;
    }
    csv_written = 1;
    /* failures are said even with -q: an exit status of 1 alone explains nothing */
    if (!quiet || ms.failed)
        fprintf(stderr, "ncsim sweep: %" PRIu64 " points merged into %s (%" PRIu64 " ok, %" PRIu64
                        " failed%s)\n",
                ms.points, strcmp(csv, "-") == 0 ? "stdout" : csv, ms.ok, ms.failed,
                ms.failed ? ": their rows have status error, and each point's file in the "
                            "output directory its message" : "");
    if (ms.failed)
        rc = 1;
    if (plot_text) {
        if (strcmp(csv, "-") == 0) {
            fputs("ncsim sweep: --plot reads the merged CSV: give --csv a file\n", stderr);
            rc = 2;
            goto out;
        }
        st = sim_plot_csv(csv, &plot, png, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim sweep: --plot: %s\n", err);
            rc = ncsim_status_exit_code(st);
            goto out;
        }
        png_written = 1;
        if (!quiet)
            fprintf(stderr, "ncsim sweep: plot of %s against %s in %s\n", plot.y, plot.x, png);
    }
out:
    if (pend_csv >= 0 && !csv_written)
        unlink(csv);
    if (pend_png >= 0 && !png_written)
        unlink(png);
    isa_file_pending_remove(pend_csv);
    isa_file_pending_remove(pend_png);
    sim_sweep_free(sw);
    return rc;
}
