/*
 * cmd_run.c -- `ncsim run PROG [options]` (CLI.md): bind inputs, simulate, write outputs,
 * statistics and a summary. A client of the public API (include/ncsim.h): the program, the
 * architecture, the run driver (slices, progress, signals) are the library's.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "load.h"
#include "trace.h"
#include "trace_sink.h"

static const char usage_run[] =
    "usage: ncsim run PROG [options]\n"
    "\n"
    "Simulate a program (.nca text or .ncx binary) on every core it uses.\n"
    "  --arch NAME|FILE.json     architecture preset (trn1 default, inf2, trn1-32xl,\n"
    "                            inf2-48xl) or config file; default: the program's .arch\n"
    "  --set KEY=VALUE           override one config value (repeatable),\n"
    "                            e.g. --set hbm.bandwidth_gbps=1200\n"
    "  --in NAME=FILE.npy        bind an input/inout HBM tensor (repeatable)\n"
    "  --out NAME=FILE.npy       write an output/inout tensor after the run (repeatable)\n"
    "  --random-inputs SEED      fill unbound inputs with seeded uniform values in [-1, 1)\n"
    "  --timing-only             model time only, skip arithmetic (fastest)\n"
    "  --stats FILE.json         write the statistics (with the resolved config)\n"
    "  --trace FILE              write a trace: .json (Chrome/Perfetto JSON), .json.gz (the\n"
    "                            same gzipped) or .pftrace (Perfetto protobuf); see\n"
    "                            docs/traces.md. Filters for big runs:\n"
    "  --trace-start NS          keep what ends at or after NS nanoseconds\n"
    "  --trace-end NS            keep what starts at or before NS nanoseconds\n"
    "  --trace-engines LIST      keep these tracks: pe,act,dve,pool,sp,cc,dma\n"
    "  --check LIST              checks during the run: races,uninit,nan,psum,sems or all\n"
    "                            (docs/check.md); findings on stderr make the exit code 1\n"
    "  --seed N                  seed for stochastic rounding and dropout (default 0)\n"
    "  --stochastic-rounding     round by the seeded stochastic rule, not nearest even\n"
    "  --progress auto|always|never   progress on stderr (auto: when it is a terminal)\n"
    "  -q, --quiet               no summary, no progress\n"
    "exit codes: 0 success, 1 program error (run-time error, deadlock), 2 usage or assembly\n"
    "error, 3 input/output error, 4 internal error.\n";

typedef struct binding {
    const char *name;
    const char *path;
    size_t name_len;
} binding_t;

#define MAX_BINDINGS 256

static int parse_binding(const char *arg, binding_t *b)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return -1;
    b->name = arg;
    b->name_len = (size_t)(eq - arg);
    b->path = eq + 1;
    return 0;
}

typedef enum { PROGRESS_AUTO, PROGRESS_ALWAYS, PROGRESS_NEVER } progress_t;

/* SIGINT/SIGTERM while tracing: the run stops between two slices (ncsim_sim_cancel is
 * async-signal-safe) and the trace is closed. */
static volatile sig_atomic_t stop_signal;
static ncsim_sim_t *volatile running;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
    if (running)
        ncsim_sim_cancel(running);
}

/* Progress on stderr: redrawn a few times a second on a terminal, one line every ~10 s
 * otherwise (the interval is the library's progress interval). */
typedef struct progress_ctx {
    int tty;
    int shown;
} progress_ctx_t;

static int show_progress(void *ctx, const ncsim_progress_t *p)
{
    progress_ctx_t *pc = ctx;
    double frac = p->total_instructions
                      ? (double)p->instructions / (double)p->total_instructions
                      : 1.0;
    fprintf(stderr, pc->tty ? "\r\033[Ksimulated %.3f us, %llu of %llu instructions "
                              "(%.0f%%), %.1f s"
                            : "simulated %.3f us, %llu of %llu instructions (%.0f%%), "
                              "%.1f s\n",
            p->now_ns / 1e3, (unsigned long long)p->instructions,
            (unsigned long long)p->total_instructions, 100.0 * frac, p->host_seconds);
    pc->shown = 1;
    return 0;
}

int cli_run(int argc, char **argv)
{
    enum { O_ARCH = 256, O_SET, O_IN, O_OUT, O_RANDOM, O_TIMING, O_TRACE, O_STATS, O_CHECK,
           O_SEED, O_SR, O_PROGRESS, O_TRACE_START, O_TRACE_END, O_TRACE_ENGINES };
    static const struct option opts[] = {{"arch", required_argument, 0, O_ARCH},
                                         {"set", required_argument, 0, O_SET},
                                         {"in", required_argument, 0, O_IN},
                                         {"out", required_argument, 0, O_OUT},
                                         {"random-inputs", required_argument, 0, O_RANDOM},
                                         {"timing-only", no_argument, 0, O_TIMING},
                                         {"trace", required_argument, 0, O_TRACE},
                                         {"trace-start", required_argument, 0, O_TRACE_START},
                                         {"trace-end", required_argument, 0, O_TRACE_END},
                                         {"trace-engines", required_argument, 0,
                                          O_TRACE_ENGINES},
                                         {"stats", required_argument, 0, O_STATS},
                                         {"check", required_argument, 0, O_CHECK},
                                         {"seed", required_argument, 0, O_SEED},
                                         {"stochastic-rounding", no_argument, 0, O_SR},
                                         {"progress", required_argument, 0, O_PROGRESS},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *arch_name = NULL, *stats_path = NULL, *trace_path = NULL;
    sim_trace_options_t topt;
    memset(&topt, 0, sizeof topt);
    int trace_filter = 0;
    const char *sets[MAX_BINDINGS];
    int nsets = 0;
    binding_t ins[MAX_BINDINGS], outs[MAX_BINDINGS];
    int nins = 0, nouts = 0;
    int timing_only = 0, stochastic = 0, quiet = 0, have_random = 0;
    unsigned checks = 0; /* --check: NCSIM_CHECK_* */
    uint64_t seed = 0, random_seed = 0;
    progress_t progress = PROGRESS_AUTO;
    int c;
    char *end;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case O_ARCH: arch_name = optarg; break;
        case O_SET:
            if (nsets == MAX_BINDINGS) {
                fputs("ncsim run: too many --set options\n", stderr);
                return 2;
            }
            sets[nsets++] = optarg;
            break;
        case O_IN:
        case O_OUT: {
            binding_t *list = c == O_IN ? ins : outs;
            int *n = c == O_IN ? &nins : &nouts;
            if (*n == MAX_BINDINGS || parse_binding(optarg, &list[*n])) {
                fprintf(stderr, "ncsim run: --%s wants NAME=FILE.npy, not '%s'\n",
                        c == O_IN ? "in" : "out", optarg);
                return 2;
            }
            (*n)++;
            break;
        }
        case O_RANDOM:
            errno = 0;
            random_seed = strtoull(optarg, &end, 0);
            if (errno || *end || !*optarg) {
                fprintf(stderr, "ncsim run: --random-inputs wants an integer seed, not '%s'\n",
                        optarg);
                return 2;
            }
            have_random = 1;
            break;
        case O_TIMING: timing_only = 1; break;
        case O_TRACE: trace_path = optarg; break;
        case O_TRACE_START:
        case O_TRACE_END: {
            errno = 0;
            double ns = strtod(optarg, &end);
            if (errno || *end || !*optarg || !(ns >= 0) || ns > 1.8e13) {
                fprintf(stderr, "ncsim run: --%s wants a time in ns (>= 0), not '%s'\n",
                        c == O_TRACE_START ? "trace-start" : "trace-end", optarg);
                return 2;
            }
            uint64_t ps = (uint64_t)llround(ns * 1000.0);
            if (c == O_TRACE_START)
                topt.start_ps = ps;
            else
                topt.end_ps = ps ? ps : 1;
            trace_filter = 1;
            break;
        }
        case O_TRACE_ENGINES: {
            char terr[256];
            if (sim_trace_parse_engines(optarg, &topt.engines, terr, sizeof terr) != NCSIM_OK) {
                fprintf(stderr, "ncsim run: %s\n", terr);
                return 2;
            }
            topt.engines_text = optarg;
            trace_filter = 1;
            break;
        }
        case O_CHECK: {
            if (ncsim_parse_checks(optarg, &checks) != NCSIM_OK) {
                fprintf(stderr, "ncsim run: --check: %s\n", ncsim_last_error());
                return 2;
            }
            break;
        }
        case O_STATS: stats_path = optarg; break;
        case O_SEED:
            errno = 0;
            seed = strtoull(optarg, &end, 0);
            if (errno || *end || !*optarg) {
                fprintf(stderr, "ncsim run: --seed wants an integer, not '%s'\n", optarg);
                return 2;
            }
            break;
        case O_SR: stochastic = 1; break;
        case O_PROGRESS:
            if (strcmp(optarg, "auto") == 0)
                progress = PROGRESS_AUTO;
            else if (strcmp(optarg, "always") == 0)
                progress = PROGRESS_ALWAYS;
            else if (strcmp(optarg, "never") == 0)
                progress = PROGRESS_NEVER;
            else {
                fprintf(stderr, "ncsim run: --progress wants auto, always or never\n");
                return 2;
            }
            break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_run, stdout); return 0;
        default: fputs(usage_run, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "ncsim run: expected one program\n%s", usage_run);
        return 2;
    }
    const char *path = argv[optind];
    if (trace_filter && !trace_path) {
        fputs("ncsim run: --trace-start, --trace-end and --trace-engines need --trace FILE\n",
              stderr);
        return 2;
    }
    if (trace_path && trc_format_for_path(trace_path) == TRC_FORMAT_COUNT) {
        fprintf(stderr, "ncsim run: --trace %s: the name must end in .json, .json.gz or "
                        ".pftrace\n",
                trace_path);
        return 2;
    }
    ncsim_program_t *prog = NULL;
    ncsim_arch_t *arch = NULL;
    int rc = cli_load("run", path, arch_name, sets, nsets, &prog, &arch);
    if (rc)
        return rc;
    ncsim_sim_t *s = NULL;
    ncsim_status_t st;
    uint32_t ntensors = ncsim_program_tensor_count(prog);
    ncsim_tensor_info_t info;
    if (timing_only && (nins || nouts)) {
        fprintf(stderr, "ncsim run: --in and --out need a functional run (drop "
                        "--timing-only)\n");
        rc = 2;
        goto out;
    }
    if (timing_only && (checks & NCSIM_CHECK_NAN)) {
        fputs("ncsim run: --check nan needs a functional run (drop --timing-only)\n", stderr);
        rc = 2;
        goto out;
    }
    /* every binding names a declared tensor of the right kind */
    uint8_t *bound = calloc(ntensors + 1, 1);
    int *in_tensor = calloc((size_t)nins + 1, sizeof *in_tensor);
    int *out_tensor = calloc((size_t)nouts + 1, sizeof *out_tensor);
    if (!bound || !in_tensor || !out_tensor) {
        free(bound);
        free(in_tensor);
        free(out_tensor);
        rc = cli_exit(NCSIM_NOMEM);
        goto out;
    }
    for (int i = 0; i < nins + nouts && !rc; i++) {
        int is_in = i < nins;
        binding_t *b = is_in ? &ins[i] : &outs[i - nins];
        int t = cli_find_hbm_tensor(prog, b->name, b->name_len, &info);
        if (t < 0) {
            fprintf(stderr, "ncsim run: --%s %.*s: the program declares no HBM tensor '%.*s'\n",
                    is_in ? "in" : "out", (int)b->name_len, b->name, (int)b->name_len,
                    b->name);
            rc = 2;
            break;
        }
        ncsim_role_t kind = info.role;
        if (is_in && kind != NCSIM_INPUT && kind != NCSIM_INOUT) {
            fprintf(stderr, "ncsim run: --in %.*s: tensor '%.*s' is %s, not input or inout\n",
                    (int)b->name_len, b->name, (int)b->name_len, b->name,
                    ncsim_role_name(kind));
            rc = 2;
        }
        if (!is_in && kind != NCSIM_OUTPUT && kind != NCSIM_INOUT) {
            fprintf(stderr, "ncsim run: --out %.*s: tensor '%.*s' is %s, not output or inout\n",
                    (int)b->name_len, b->name, (int)b->name_len, b->name,
                    ncsim_role_name(kind));
            rc = 2;
        }
        if (is_in) {
            if (bound[t]) {
                fprintf(stderr, "ncsim run: tensor '%.*s' is bound twice\n", (int)b->name_len,
                        b->name);
                rc = 2;
            }
            bound[t] = 1;
            in_tensor[i] = t;
        } else {
            out_tensor[i - nins] = t;
        }
    }
    if (!rc && !timing_only && !have_random)
        for (uint32_t t = 0; t < ntensors; t++) {
            if (ncsim_program_tensor(prog, t, &info) == NCSIM_OK && info.memory == NCSIM_HBM &&
                !bound[t] && (info.role == NCSIM_INPUT || info.role == NCSIM_INOUT)) {
                fprintf(stderr, "ncsim run: input tensor '%s' is not bound: give --in %s=FILE.npy "
                                "or --random-inputs SEED\n",
                        info.name, info.name);
                rc = 2;
            }
        }
    free(bound);
    if (rc) {
        free(in_tensor);
        free(out_tensor);
        goto out;
    }
    ncsim_options_t so;
    ncsim_options_init(&so);
    so.timing_only = timing_only;
    so.stochastic_rounding = stochastic;
    so.seed = seed;
    so.checks = checks;
    so.program_name = path;
    if (trace_path) {
        so.trace_path = trace_path;
        so.trace_start_ns = (double)topt.start_ps / 1000.0;
        /* an end of 0 keeps only what starts at 0: 1 ps, as the library reads 0 as "no end" */
        so.trace_end_ns = (double)topt.end_ps / 1000.0;
        so.trace_engines = topt.engines_text;
    }
    st = ncsim_sim_create(prog, arch, &so, &s);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim run: %s\n", ncsim_last_error());
        rc = cli_exit(st);
    }
    /* from here on the trace file exists: a signal stops the run and finishes the trace (one
     * while the inputs are read stops the run before its first slice) */
    struct sigaction sa_new, sa_int, sa_term;
    int handling = trace_path && !rc;
    if (handling) {
        running = s;
        memset(&sa_new, 0, sizeof sa_new);
        sa_new.sa_handler = on_stop_signal;
        sigemptyset(&sa_new.sa_mask);
        sigaction(SIGINT, &sa_new, &sa_int);
        sigaction(SIGTERM, &sa_new, &sa_term);
    }
    for (int i = 0; !rc && i < nins; i++) {
        st = ncsim_sim_load_npy(s, (uint32_t)in_tensor[i], ins[i].path);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim run: %s\n", ncsim_last_error());
            rc = cli_exit(st);
        }
    }
    if (!rc && !timing_only && have_random) {
        st = ncsim_sim_random_inputs(s, random_seed);
        if (st != NCSIM_OK)
            rc = cli_exit(st);
    }
    free(in_tensor);
    if (rc) {
        free(out_tensor);
        goto restore;
    }
    int tty = isatty(STDERR_FILENO);
    progress_ctx_t pc = {tty, 0};
    int show = !quiet && (progress == PROGRESS_ALWAYS ||
                          (progress == PROGRESS_AUTO && tty));
    if (show)
        ncsim_sim_set_progress(s, show_progress, &pc, tty ? 0.25 : 10.0);
    st = ncsim_sim_run(s);
    if (show && tty && pc.shown)
        fputs("\r\033[K", stderr);
    if (trace_path) {
        /* a signal while the trace is being finished is noted, not fatal */
        ncsim_status_t tst = ncsim_sim_close_trace(s);
        sigaction(SIGINT, &sa_int, NULL);
        sigaction(SIGTERM, &sa_term, NULL);
        running = NULL;
        handling = 0;
        if (tst != NCSIM_OK) {
            fprintf(stderr, "ncsim run: %s\n", ncsim_last_error());
            if (st == NCSIM_OK)
                rc = cli_exit(tst);
        }
        if (stop_signal) {
            fprintf(stderr, "ncsim run: stopped by signal %d at %.3f ns; the trace is complete "
                            "up to there\n",
                    (int)stop_signal, ncsim_sim_now_ns(s));
            free(out_tensor);
            rc = 128 + (int)stop_signal;
            goto out;
        }
    }
    if (st == NCSIM_IO && ncsim_sim_finished(s)) {
        /* the run ended but finishing its trace failed */
        fprintf(stderr, "ncsim run: %s\n", ncsim_last_error());
        rc = cli_exit(st);
    } else if (st == NCSIM_PROGRAM) {
        fputs(ncsim_sim_error(s), stderr);
        rc = cli_exit(st);
    } else if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim run: %s\n", ncsim_last_error());
        rc = cli_exit(st);
    }
    if (checks) { /* findings of --check: stderr, exit code 1 */
        ncsim_sim_findings_print(s, stderr, 50);
        if ((ncsim_sim_finding_count(s) || ncsim_sim_findings_dropped(s)) && !rc)
            rc = 1;
    }
    for (int i = 0; !rc && i < nouts; i++) {
        st = ncsim_sim_save_npy(s, (uint32_t)out_tensor[i], outs[i].path);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim run: %s\n", ncsim_last_error());
            rc = cli_exit(st);
        }
    }
    free(out_tensor);
    if (stats_path) {
        char *json = NULL;
        if (ncsim_sim_stats_json(s, &json) != NCSIM_OK ||
            sim_write_file(stats_path, json, strlen(json))) {
            fprintf(stderr, "ncsim run: cannot write %s: %s\n", stats_path,
                    json ? strerror(errno) : "out of memory");
            if (!rc)
                rc = cli_exit(json ? NCSIM_IO : NCSIM_NOMEM);
        }
        ncsim_free(json);
        /* the resolved architecture config beside the statistics (gem5's config.json):
         * STATS.json -> STATS.config.json */
        char *cfg = NULL;
        ncsim_sim_arch_json(s, &cfg);
        size_t sl = strlen(stats_path);
        char *cfg_path = malloc(sl + 16);
        if (cfg && cfg_path) {
            size_t base = sl >= 5 && strcmp(stats_path + sl - 5, ".json") == 0 ? sl - 5 : sl;
            memcpy(cfg_path, stats_path, base);
            strcpy(cfg_path + base, ".config.json");
            if (strcmp(stats_path, "-") != 0 && sim_write_file(cfg_path, cfg, strlen(cfg))) {
                fprintf(stderr, "ncsim run: cannot write %s: %s\n", cfg_path, strerror(errno));
                if (!rc)
                    rc = cli_exit(NCSIM_IO);
            }
        }
        ncsim_free(cfg);
        free(cfg_path);
    }
    if (!quiet && (st == NCSIM_OK || ncsim_sim_finished(s)))
        ncsim_sim_print_summary(s, stdout);
restore:
    if (handling) {
        sigaction(SIGINT, &sa_int, NULL);
        sigaction(SIGTERM, &sa_term, NULL);
        running = NULL;
    }
out:
    ncsim_sim_free(s);
    ncsim_program_free(prog);
    ncsim_arch_free(arch);
    return rc;
}
