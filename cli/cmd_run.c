/*
 * cmd_run.c -- `ncsim run PROG [options]` (CLI.md): bind inputs, simulate, write outputs,
 * statistics and a summary.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "checker.h"
#include "cli.h"
#include "dump.h"
#include "load.h"
#include "npy.h"
#include "outputs.h"
#include "numerics.h"
#include "rng.h"
#include "sim.h"
#include "stats.h"
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
    "  --dump NAME[@CORE]=FILE.npy  write any tensor (HBM input/output/scratch, SBUF or\n"
    "                            PSUM of core CORE, default 0) after the run (repeatable)\n"
    "  --dump-at LINE            take the --dump files when the first instruction of source\n"
    "                            line LINE that writes memory has taken effect instead\n"
    "                            (docs/explain.md)\n"
    "  --random-inputs SEED      fill unbound inputs with seeded uniform values in [-1, 1)\n"
    "  --timing-only             model time only, skip arithmetic (fastest)\n"
    "  --stats FILE.json         write the statistics (with the resolved config)\n"
    "  --trace FILE              write a trace: .json (Chrome/Perfetto JSON), .json.gz (the\n"
    "                            same gzipped) or .pftrace (Perfetto protobuf); see\n"
    "                            docs/traces.md. Filters for big runs:\n"
    "  --trace-start NS          keep what ends at or after NS nanoseconds\n"
    "  --trace-end NS            keep what starts at or before NS nanoseconds\n"
    "  --trace-engines LIST      keep these tracks: pe,act,dve,pool,sp,cc,dma\n"
    "  --check LIST              checks during the run: races,uninit,nan,psum,sems,views, all\n"
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

static int find_tensor(const isa_program_t *p, const binding_t *b)
{
    return sim_find_hbm_tensor(p, b->name, b->name_len);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Load one --in file into tensor t; a note on stderr when its data is converted. */
static ncsim_status_t bind_input(sim_t *s, const isa_program_t *p, uint32_t t,
                                 const char *path, int quiet, char *err, size_t errlen)
{
    mdl_npy_t a;
    ncsim_status_t st = mdl_npy_read(path, &a, err, errlen);
    if (st != NCSIM_OK)
        return NCSIM_IO; /* an input file too big to hold is the file's problem: exit 3 */
    const isa_tensor_t *T = &p->tensors[t];
    mdl_npy_type_t want = mdl_npy_type_for_dtype((isa_dtype_t)T->dtype);
    if (!quiet && a.type != want && mdl_npy_convertible(a.type, want))
        fprintf(stderr, "ncsim run: note: %s holds %s data; tensor '%s' (%s) reads it as %s%s\n",
                path, a.descr, isa_string(p, T->name), isa_dtype_name((isa_dtype_t)T->dtype),
                mdl_npy_type_descr(want),
                a.type == MDL_NPY_F8 ? " (each value rounded to nearest even)" : "");
    st = sim_tensor_write_npy(s, t, &a, path, err, errlen);
    mdl_npy_free(&a);
    return st;
}

static ncsim_status_t write_output(sim_t *s, const isa_program_t *p, uint32_t t,
                                   const char *path, const char *shown, char *err,
                                   size_t errlen)
{
    const isa_tensor_t *T = &p->tensors[t];
    uint64_t n = sim_tensor_elems(p, t);
    isa_dtype_t dt = (isa_dtype_t)T->dtype;
    int native = mdl_npy_dtype_is_native(dt);
    size_t es = native ? isa_dtype_size(dt) : sizeof(float);
    void *buf = malloc(n * es > 0 ? n * es : 1);
    if (!buf) {
        snprintf(err, errlen, "out of host memory: %.1f MiB to write tensor '%s' to '%s'",
                 (double)(n * es) / 1048576.0, isa_string(p, T->name), shown);
        return NCSIM_NOMEM;
    }
    ncsim_status_t st = native ? sim_tensor_read_raw(s, t, buf)
                               : sim_tensor_read_f32(s, t, (float *)buf);
    if (st == NCSIM_OK) {
        const char *descr = mdl_npy_type_descr(mdl_npy_type_for_dtype(dt));
        uint64_t dims[ISA_MAX_DIMS + 1];
        for (unsigned d = 0; d < T->ndims; d++)
            dims[d] = T->dims[d];
        st = mdl_npy_write(path, descr, dims, T->ndims, buf, err, errlen);
        if (st != NCSIM_OK) {
            snprintf(err, errlen, "cannot write '%s'", shown);
            st = NCSIM_IO;
        }
    }
    free(buf);
    return st;
}

/* Does any view of the program (any instruction, any core) overlap HBM tensor t? A random
 * input nothing reads is not filled: an untouched tensor costs no host memory. */
static int hbm_tensor_touched(const isa_program_t *p, uint32_t t)
{
    const isa_tensor_t *T = &p->tensors[t];
    uint64_t lo = T->offset, hi = lo + sim_tensor_elems(p, t) * isa_dtype_size((isa_dtype_t)T->dtype);
    for (uint32_t i = 0; i < p->nviews; i++) {
        const isa_view_t *v = &p->views[i];
        if (v->space != ISA_SPACE_HBM)
            continue;
        int64_t a, b;
        isa_view_byte_range(v, &a, &b);
        if (a < (int64_t)hi && b > (int64_t)lo)
            return 1;
    }
    return 0;
}

typedef enum { PROGRESS_AUTO, PROGRESS_ALWAYS, PROGRESS_NEVER } progress_t;

/* SIGINT/SIGTERM/SIGHUP while tracing: stop between slices of the run and close the trace
 * (outside the run, isa/file.c's handler removes the outputs and ends the process). */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

/* on_stop_signal for SIG, unless SIG is ignored (nohup): the previous action into *old. */
static void catch_stop_signal(int sig, const struct sigaction *sa, struct sigaction *old)
{
    if (sigaction(sig, NULL, old) == 0 && !(old->sa_flags & SA_SIGINFO) &&
        old->sa_handler == SIG_IGN)
        return;
    sigaction(sig, sa, old);
}

/* Progress on stderr: redrawn a few times a second on a terminal, one line every ~10 s
 * otherwise. */
typedef struct progress_ctx {
    uint64_t total_instrs;
    int tty;
    int shown;
} progress_ctx_t;

static int show_progress(void *ctx, sim_t *s, double host_seconds)
{
    progress_ctx_t *pc = ctx;
    const sim_stats_t *ss = sim_stats(s);
    double frac = pc->total_instrs ? (double)ss->instructions / (double)pc->total_instrs : 1.0;
    fprintf(stderr, pc->tty ? "\r\033[Ksimulated %.3f us, %llu of %llu instructions "
                              "(%.0f%%), %.1f s"
                            : "simulated %.3f us, %llu of %llu instructions (%.0f%%), "
                              "%.1f s\n",
            (double)sim_now_ps(s) / 1e6, (unsigned long long)ss->instructions,
            (unsigned long long)pc->total_instrs, 100.0 * frac, host_seconds);
    pc->shown = 1;
    return 0;
}

/* Run to the end with the library's driver (sim/drive.c), printing progress when asked.
 * `sliced` runs in slices even without progress, so that a signal can stop the run
 * cleanly. */
static ncsim_status_t run_with_progress(sim_t *s, uint64_t total_instrs, int show, int sliced)
{
    if (!show && !sliced)
        return sim_run(s, SIM_RUN_UNTIL_IDLE, 0);
    progress_ctx_t pc = {total_instrs, isatty(STDERR_FILENO), 0};
    sim_drive_t d;
    memset(&d, 0, sizeof d);
    d.interval = pc.tty ? 0.25 : 10.0;
    d.progress = show ? show_progress : NULL;
    d.ctx = &pc;
    d.stop = &stop_signal;
    int stopped;
    ncsim_status_t st = sim_drive(s, UINT64_MAX, &d, &stopped);
    if (pc.shown && pc.tty)
        fputs("\r\033[K", stderr);
    return st;
}

int cli_run(int argc, char **argv)
{
    enum { O_ARCH = 256, O_SET, O_IN, O_OUT, O_RANDOM, O_TIMING, O_TRACE, O_STATS, O_CHECK,
           O_SEED, O_SR, O_PROGRESS, O_TRACE_START, O_TRACE_END, O_TRACE_ENGINES, O_DUMP,
           O_DUMP_AT };
    static const struct option opts[] = {{"arch", required_argument, 0, O_ARCH},
                                         {"set", required_argument, 0, O_SET},
                                         {"in", required_argument, 0, O_IN},
                                         {"out", required_argument, 0, O_OUT},
                                         {"dump", required_argument, 0, O_DUMP},
                                         {"dump-at", required_argument, 0, O_DUMP_AT},
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
    unsigned checks = 0; /* --check: sim/checker.h */
    chk_t *chk = NULL;
    uint64_t seed = 0, random_seed = 0;
    progress_t progress = PROGRESS_AUTO;
    cli_dumps_t dumps; /* --dump, --dump-at: cli/dump.c */
    memset(&dumps, 0, sizeof dumps);
    char derr[512];
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
        case O_DUMP:
        case O_DUMP_AT:
            if ((c == O_DUMP ? cli_dump_parse(&dumps, optarg, derr, sizeof derr)
                             : cli_dump_parse_line(&dumps, optarg, derr, sizeof derr))) {
                fprintf(stderr, "ncsim run: %s\n", derr);
                return 2;
            }
            break;
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
            char cerr[256];
            if (chk_parse_list(optarg, &checks, cerr, sizeof cerr)) {
                fprintf(stderr, "ncsim run: --check: %s\n", cerr);
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
    char err[4096];
    /* Every file this run writes, registered now: a run that fails from here on leaves
     * none of them behind (docs/cli.md, "Output files"). */
    static cli_outputs_t outputs;
    cli_outputs_init(&outputs, "run");
    char *cfg_path = NULL;
    for (int i = 0; i < nouts; i++)
        if (cli_outputs_add(&outputs, outs[i].path, "--out"))
            return 2;
    if (trace_path && cli_outputs_add(&outputs, trace_path, "--trace"))
        return 2;
    if (cli_dumps_register(&dumps, &outputs))
        return 2;
    if (stats_path && strcmp(stats_path, "-") != 0) {
        /* the resolved architecture config beside the statistics (gem5's config.json):
         * STATS.json -> STATS.config.json */
        size_t sl = strlen(stats_path);
        cfg_path = malloc(sl + 16);
        if (!cfg_path) {
            fputs("ncsim run: out of host memory\n", stderr);
            return 4;
        }
        size_t base = sl >= 5 && strcmp(stats_path + sl - 5, ".json") == 0 ? sl - 5 : sl;
        memcpy(cfg_path, stats_path, base);
        strcpy(cfg_path + base, ".config.json");
        if (cli_outputs_add(&outputs, stats_path, "--stats") ||
            cli_outputs_add(&outputs, cfg_path, "--stats config")) {
            free(cfg_path);
            return 2;
        }
    }
    int rc = 0;
    sim_t *s = NULL;
    isa_program_t *prog = NULL;
    int run_done = 0; /* the simulation ran (to its end, an error or a deadlock) */
    if (trace_filter && !trace_path) {
        fputs("ncsim run: --trace-start, --trace-end and --trace-engines need --trace FILE\n",
              stderr);
        rc = 2;
        goto out;
    }
    if (trace_path && trc_format_for_path(trace_path) == TRC_FORMAT_COUNT) {
        fprintf(stderr, "ncsim run: --trace %s: the name must end in .json, .json.gz or "
                        ".pftrace\n",
                trace_path);
        rc = 2;
        goto out;
    }
    sim_trace_file_t *trace = NULL;

    /* architecture: --arch, else the program's .arch (resolved after loading), else trn1 */
    for (int i = 0; i < nins; i++) /* never removed on failure: it is also an input */
        cli_outputs_protect(&outputs, ins[i].path);
    cli_outputs_protect(&outputs, path);
    if (arch_name)
        cli_outputs_protect(&outputs, arch_name);
    double load_t0 = now_seconds();
    rc = cli_load_program("run", path, arch_name, &prog);
    double load_seconds = now_seconds() - load_t0;
    if (rc)
        goto out;
    ncsim_status_t st;
    mdl_arch_t arch;
    const char *use = arch_name ? arch_name : (prog->arch[0] ? prog->arch : "trn1");
    st = mdl_arch_load(use, &arch, err, sizeof err);
    for (int i = 0; st == NCSIM_OK && i < nsets; i++)
        st = mdl_arch_set(&arch, sets[i], err, sizeof err);
    /* a multi-chip program on a single-chip preset: grow the system to fit */
    if (st == NCSIM_OK)
        st = mdl_arch_validate(&arch, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim run: %s\n", err);
        rc = cli_exit(st == NCSIM_IO ? NCSIM_IO : NCSIM_USAGE);
        goto out;
    }
    if (timing_only && (nins || nouts)) {
        fprintf(stderr, "ncsim run: --in and --out need a functional run (drop "
                        "--timing-only)\n");
        rc = 2;
        goto out;
    }
    if (cli_dumps_resolve(&dumps, prog, timing_only, derr, sizeof derr)) {
        fprintf(stderr, "ncsim run: %s\n", derr);
        rc = 2;
        goto out;
    }
    if (timing_only && (checks & CHK_NAN)) {
        fputs("ncsim run: --check nan needs a functional run (drop --timing-only)\n", stderr);
        rc = 2;
        goto out;
    }
    if (checks) {
        if (chk_create(prog, &arch, checks, &chk) != NCSIM_OK) {
            rc = cli_exit(NCSIM_NOMEM);
            goto out;
        }
        chk_static(chk);
    }
    /* every binding names a declared tensor of the right kind */
    uint8_t *bound = calloc(prog->ntensors + 1, 1);
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
        int t = find_tensor(prog, b);
        if (t < 0) {
            fprintf(stderr, "ncsim run: --%s %.*s: the program declares no HBM tensor '%.*s'\n",
                    is_in ? "in" : "out", (int)b->name_len, b->name, (int)b->name_len,
                    b->name);
            rc = 2;
            break;
        }
        int kind = prog->tensors[t].kind;
        if (is_in && kind != ISA_TK_INPUT && kind != ISA_TK_INOUT) {
            fprintf(stderr, "ncsim run: --in %.*s: tensor '%.*s' is %s, not input or inout\n",
                    (int)b->name_len, b->name, (int)b->name_len, b->name,
                    isa_tensor_kind_name((isa_tensor_kind_t)kind));
            rc = 2;
        }
        if (!is_in && kind != ISA_TK_OUTPUT && kind != ISA_TK_INOUT) {
            fprintf(stderr, "ncsim run: --out %.*s: tensor '%.*s' is %s, not output or inout\n",
                    (int)b->name_len, b->name, (int)b->name_len, b->name,
                    isa_tensor_kind_name((isa_tensor_kind_t)kind));
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
        for (uint32_t t = 0; t < prog->ntensors; t++) {
            int kind = prog->tensors[t].kind;
            if (prog->tensors[t].space == ISA_SPACE_HBM && !bound[t] &&
                (kind == ISA_TK_INPUT || kind == ISA_TK_INOUT)) {
                fprintf(stderr, "ncsim run: input tensor '%s' is not bound: give --in %s=FILE.npy "
                                "or --random-inputs SEED\n",
                        isa_string(prog, prog->tensors[t].name),
                        isa_string(prog, prog->tensors[t].name));
                rc = 2;
            }
        }
    if (rc) {
        free(bound);
        free(in_tensor);
        free(out_tensor);
        goto out;
    }
    /* every output path, before the simulation: a typo costs nothing */
    if (cli_outputs_validate(&outputs)) {
        free(bound);
        free(in_tensor);
        free(out_tensor);
        rc = 3;
        goto out;
    }
    sim_options_t so;
    memset(&so, 0, sizeof so);
    so.arch = &arch;
    so.timing_only = timing_only;
    so.stochastic_rounding = stochastic;
    so.seed = seed;
    if (trace_path) {
        topt.path = cli_outputs_path(&outputs, trace_path);
        topt.program = path;
        topt.timing_only = timing_only;
        st = sim_trace_open(&topt, prog, &arch, &trace, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim run: %s\n", err);
            free(bound);
            free(in_tensor);
            free(out_tensor);
            rc = cli_exit(st);
            goto out;
        }
        so.trace = sim_trace_sink(trace);
    }
    so.observer = cli_dumps_observer(&dumps, chk ? chk_observer(chk) : NULL);
    st = sim_create(prog, &so, &s, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim run: %s\n", err);
        rc = cli_exit(st);
    }
    for (int i = 0; !rc && i < nins; i++) {
        st = bind_input(s, prog, (uint32_t)in_tensor[i], ins[i].path, quiet, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim run: %s\n", err);
            rc = cli_exit(st);
        }
    }
    if (!rc && !timing_only && have_random)
        for (uint32_t t = 0; t < prog->ntensors && !rc; t++) {
            int kind = prog->tensors[t].kind;
            if (prog->tensors[t].space == ISA_SPACE_HBM && !bound[t] &&
                (kind == ISA_TK_INOUT || (kind == ISA_TK_INPUT && hbm_tensor_touched(prog, t)))) {
                const isa_tensor_t *T = &prog->tensors[t];
                double need = (double)sim_tensor_elems(prog, t) *
                              (4.0 + isa_dtype_size((isa_dtype_t)T->dtype));
                double ram = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
                /* refuse what cannot fit rather than meet the kernel's OOM killer */
                st = ram > 0 && need > ram ? NCSIM_NOMEM
                                           : sim_tensor_fill_random(s, t, random_seed);
                if (st != NCSIM_OK) {
                    fprintf(stderr, "ncsim run: out of host memory: %.1f MiB for the random "
                                    "values of tensor '%s' (%s%s), this host has %.1f MiB\n",
                            need / 1048576.0, isa_string(prog, T->name),
                            isa_dtype_name((isa_dtype_t)T->dtype),
                            "; bind it with --in, or use --timing-only", ram / 1048576.0);
                    rc = cli_exit(st);
                }
            }
        }
    free(bound);
    free(in_tensor);
    if (rc) {
        free(out_tensor);
        goto out;
    }
    int show = !quiet && (progress == PROGRESS_ALWAYS ||
                          (progress == PROGRESS_AUTO && isatty(STDERR_FILENO)));
    double t0 = now_seconds();
    struct sigaction sa_new, sa_int, sa_term, sa_hup;
    if (trace) {
        memset(&sa_new, 0, sizeof sa_new);
        sa_new.sa_handler = on_stop_signal;
        sigemptyset(&sa_new.sa_mask);
        catch_stop_signal(SIGINT, &sa_new, &sa_int);
        catch_stop_signal(SIGTERM, &sa_new, &sa_term);
        catch_stop_signal(SIGHUP, &sa_new, &sa_hup);
    }
    st = run_with_progress(s, prog->ninstrs, show, trace != NULL);
    run_done = 1;
    double host = now_seconds() - t0;
    if (trace) {
        /* a signal while the trace is being finished is noted, not fatal */
        ncsim_status_t tst = sim_trace_close(trace, NULL, err, sizeof err);
        trace = NULL;
        sigaction(SIGINT, &sa_int, NULL);
        sigaction(SIGTERM, &sa_term, NULL);
        sigaction(SIGHUP, &sa_hup, NULL);
        if (tst != NCSIM_OK) {
            char named[2048];
            fprintf(stderr, "ncsim run: %s\n",
                    cli_outputs_message(&outputs, err, named, sizeof named));
            if (st == NCSIM_OK)
                rc = cli_exit(tst);
        } else {
            cli_outputs_mark_written(&outputs, trace_path);
        }
        if (stop_signal) {
            fprintf(stderr, "ncsim run: stopped by signal %d at %.3f ns; the trace is complete "
                            "up to there\n",
                    (int)stop_signal, (double)sim_now_ps(s) / 1000.0);
            free(out_tensor);
            rc = 128 + (int)stop_signal;
            goto out;
        }
    }
    if (st != NCSIM_OK) {
        fputs(sim_error(s), stderr);
        rc = cli_exit(st);
    }
    if (dumps.n) { /* also after a run-time error: the state it stopped in */
        int drc = cli_dumps_finish(&dumps, s);
        if (drc && !rc)
            rc = drc;
    }
    if (chk) { /* findings of --check: stderr, exit code 1 */
        chk_print(chk, stderr, 50);
        if ((chk_count(chk) || chk_dropped(chk)) && !rc)
            rc = 1;
    }
    const sim_stats_t *ss = sim_stats(s);
    char *why = NULL; /* a failed simulation, as --stats records it */
    if (st != NCSIM_OK || rc) {
        why = cli_escape(st != NCSIM_OK ? sim_error(s)
                                        : "ncsim check findings (--check); see stderr");
        if (why) { /* one line: the first of the message */
            char *nl = strchr(why, '\n');
            if (nl)
                *nl = 0;
        }
    }
    sim_run_info_t info = {
        path,        timing_only, seed, host, rc || st != NCSIM_OK ? (why ? why : "failed") : NULL,
        load_seconds};
    for (int i = 0; !rc && i < nouts; i++) {
        st = write_output(s, prog, (uint32_t)out_tensor[i],
                          cli_outputs_path(&outputs, outs[i].path), outs[i].path, err,
                          sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim run: %s\n", err);
            rc = cli_exit(st);
        } else {
            cli_outputs_mark_written(&outputs, outs[i].path);
        }
    }
    free(out_tensor);
    if (stats_path) {
        char *json = sim_stats_json(ss, &arch, prog, &info);
        const char *sp = cli_outputs_path(&outputs, stats_path);
        if (!json || sim_write_file(sp, json, strlen(json))) {
            fprintf(stderr, "ncsim run: cannot write %s: %s\n", stats_path,
                    json ? strerror(errno) : "out of memory");
            if (!rc)
                rc = cli_exit(json ? NCSIM_IO : NCSIM_NOMEM);
        } else {
            cli_outputs_mark_written(&outputs, stats_path);
        }
        free(json);
        char *cfg = mdl_arch_to_json(&arch);
        if (cfg && cfg_path) {
            if (sim_write_file(cli_outputs_path(&outputs, cfg_path), cfg, strlen(cfg))) {
                fprintf(stderr, "ncsim run: cannot write %s: %s\n", cfg_path, strerror(errno));
                if (!rc)
                    rc = cli_exit(NCSIM_IO);
            } else {
                cli_outputs_mark_written(&outputs, cfg_path);
            }
        }
        free(cfg);
    }
    free(why);
    if (!quiet && (st == NCSIM_OK || sim_finished(s)))
        sim_stats_print(stdout, ss, &arch, prog, &info);
out:
    if (trace) {
        char terr[512];
        sim_trace_close(trace, NULL, terr, sizeof terr);
    }
    /* Success, or a program error found by a simulation that ran (exit 1, or a signal):
     * what was written goes into place (the trace and statistics of a failed run say what
     * happened), the rest is removed. Any other failure removes every target. */
    if (rc == 0 || (run_done && (rc == 1 || rc > 128))) {
        if (cli_outputs_commit(&outputs) && !rc)
            rc = 3;
    } else {
        cli_outputs_abort(&outputs);
    }
    cli_outputs_free(&outputs);
    free(cfg_path);
    sim_destroy(s);
    chk_destroy(chk);
    isa_program_free(prog);
    return rc;
}
