/*
 * cmd_run.c -- `ncsim run PROG [options]` (CLI.md): bind inputs, simulate, write outputs,
 * statistics and a summary. A client of the public API (include/ncsim.h), like `ncsim check`
 * and the Python package: this file turns options into calls and statuses into exit codes;
 * the run itself (inputs, random values, checks, traces, dumps, progress, cancellation) is
 * the library's.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "dump.h"
#include "outputs.h"
#include "trace.h" /* trc_format_for_path: which trace formats there are */

#define MAX_BINDINGS 256

/* One --in or --out: NAME=FILE.npy, resolved to a tensor before the run. */
typedef struct binding {
    const char *name;
    const char *path;
    size_t name_len;
    int tensor;
} binding_t;

typedef enum { PROGRESS_AUTO, PROGRESS_ALWAYS, PROGRESS_NEVER } progress_t;

/* Everything the command line says. */
typedef struct run_args {
    const char *path, *arch_name, *stats_path, *trace_path;
    const char *sets[MAX_BINDINGS];
    int nsets;
    binding_t ins[MAX_BINDINGS], outs[MAX_BINDINGS];
    int nins, nouts;
    int timing_only, stochastic, quiet, have_random, trace_filter;
    double trace_start_ns, trace_end_ns;
    const char *trace_engines;
    unsigned checks;
    uint64_t seed, random_seed;
    progress_t progress;
    cli_dumps_t dumps;
} run_args_t;

/* ---- options: one row per option, one small function per kind of value ---------------------- */

/* An integer as strtoull reads it (decimal, 0x hex, 0 octal). */
static int parse_u64(const char *arg, uint64_t *v)
{
    char *end;
    errno = 0;
    *v = strtoull(arg, &end, 0);
    return errno || *end || !*arg ? -1 : 0;
}

static int opt_arch(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    (void)name;
    a->arch_name = arg;
    return 0;
}

static int opt_set(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    (void)name;
    if (a->nsets == MAX_BINDINGS) {
        fputs("ncsim run: too many --set options\n", stderr);
        return -1;
    }
    a->sets[a->nsets++] = arg;
    return 0;
}

static int opt_binding(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    int in = strcmp(name, "in") == 0;
    binding_t *list = in ? a->ins : a->outs;
    int *n = in ? &a->nins : &a->nouts;
    const char *eq = strchr(arg, '=');
    if (*n == MAX_BINDINGS || !eq || eq == arg || !eq[1]) {
        fprintf(stderr, "ncsim run: --%s wants NAME=FILE.npy, not '%s'\n", name, arg);
        return -1;
    }
    list[(*n)++] = (binding_t){arg, eq + 1, (size_t)(eq - arg), -1};
    return 0;
}

static int opt_dump(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    char err[512];
    if ((strcmp(name, "dump") == 0 ? cli_dump_parse(&a->dumps, arg, err, sizeof err)
                                   : cli_dump_parse_line(&a->dumps, arg, err, sizeof err))) {
        fprintf(stderr, "ncsim run: %s\n", err);
        return -1;
    }
    return 0;
}

static int opt_random(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    (void)name;
    if (parse_u64(arg, &a->random_seed)) {
        fprintf(stderr, "ncsim run: --random-inputs wants an integer seed, not '%s'\n", arg);
        return -1;
    }
    a->have_random = 1;
    return 0;
}

static int opt_seed(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    (void)name;
    if (parse_u64(arg, &a->seed)) {
        fprintf(stderr, "ncsim run: --seed wants an integer, not '%s'\n", arg);
        return -1;
    }
    return 0;
}

static int opt_flag(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    (void)arg;
    if (strcmp(name, "timing-only") == 0)
        a->timing_only = 1;
    else if (strcmp(name, "stochastic-rounding") == 0)
        a->stochastic = 1;
    else
        a->quiet = 1;
    return 0;
}

static int opt_path(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    if (strcmp(name, "trace") == 0)
        a->trace_path = arg;
    else
        a->stats_path = arg;
    return 0;
}

static int opt_trace_window(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    char *end;
    errno = 0;
    double ns = strtod(arg, &end);
    if (errno || *end || !*arg || !(ns >= 0) || ns > 1.8e13) {
        fprintf(stderr, "ncsim run: --%s wants a time in ns (>= 0), not '%s'\n", name, arg);
        return -1;
    }
    if (strcmp(name, "trace-start") == 0)
        a->trace_start_ns = ns;
    else /* "keep what starts at or before 0 ns" is 1 ps: 0 means no end to the library */
        a->trace_end_ns = ns > 0 ? ns : 0.001;
    a->trace_filter = 1;
    return 0;
}

static int opt_trace_engines(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    (void)name;
    if (ncsim_parse_trace_engines(arg) != NCSIM_OK) {
        fprintf(stderr, "ncsim run: %s\n", ncsim_last_error());
        return -1;
    }
    a->trace_engines = arg;
    a->trace_filter = 1;
    return 0;
}

static int opt_check(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    (void)name;
    if (ncsim_parse_checks(arg, &a->checks) != NCSIM_OK) {
        fprintf(stderr, "ncsim run: --check: %s\n", ncsim_last_error());
        return -1;
    }
    return 0;
}

static int opt_progress(void *p, const char *name, const char *arg)
{
    run_args_t *a = p;
    (void)name;
    static const char *const modes[] = {"auto", "always", "never"};
    for (int i = 0; i < 3; i++)
        if (strcmp(arg, modes[i]) == 0) {
            a->progress = (progress_t)i;
            return 0;
        }
    fprintf(stderr, "ncsim run: --progress wants auto, always or never\n");
    return -1;
}

static const cli_option_t run_options[] = {
    {"arch", 0, "NAME|FILE.json", opt_arch,
     "architecture preset (trn1 default, inf2, trn1-32xl,\n"
     "inf2-48xl) or config file; default: the program's .arch"},
    {"set", 0, "KEY=VALUE", opt_set,
     "override one config value (repeatable),\n"
     "e.g. --set hbm.bandwidth_gbps=1200"},
    {"in", 0, "NAME=FILE.npy", opt_binding, "bind an input/inout HBM tensor (repeatable)"},
    {"out", 0, "NAME=FILE.npy", opt_binding,
     "write an output/inout tensor after the run (repeatable)"},
    {"dump", 0, "NAME[@CORE]=FILE.npy", opt_dump,
     "write any tensor (HBM input/output/scratch, SBUF or\n"
     "PSUM of core CORE, default 0) after the run (repeatable)"},
    {"dump-at", 0, "LINE", opt_dump,
     "take the --dump files when the first instruction of source\n"
     "line LINE that writes memory has taken effect instead\n"
     "(docs/explain.md)"},
    {"random-inputs", 0, "SEED", opt_random,
     "fill unbound inputs with seeded uniform values in [-1, 1)"},
    {"timing-only", 0, NULL, opt_flag, "model time only, skip arithmetic (fastest)"},
    {"stats", 0, "FILE.json", opt_path, "write the statistics (with the resolved config)"},
    {"trace", 0, "FILE", opt_path,
     "write a trace: .json (Chrome/Perfetto JSON), .json.gz (the\n"
     "same gzipped) or .pftrace (Perfetto protobuf); see\n"
     "docs/traces.md. Filters for big runs:"},
    {"trace-start", 0, "NS", opt_trace_window, "keep what ends at or after NS nanoseconds"},
    {"trace-end", 0, "NS", opt_trace_window, "keep what starts at or before NS nanoseconds"},
    {"trace-engines", 0, "LIST", opt_trace_engines,
     "keep these tracks: pe,act,dve,pool,sp,cc,dma"},
    {"check", 0, "LIST", opt_check,
     "checks during the run: races,uninit,nan,psum,sems,views, all\n"
     "(docs/check.md); findings on stderr make the exit code 1"},
    {"seed", 0, "N", opt_seed, "seed for stochastic rounding and dropout (default 0)"},
    {"stochastic-rounding", 0, NULL, opt_flag,
     "round by the seeded stochastic rule, not nearest even"},
    {"progress", 0, "auto|always|never", opt_progress,
     "progress on stderr (auto: when it is a terminal)"},
    {"quiet", 'q', NULL, opt_flag, "no summary, no progress"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t run_command = {
    "run",
    "usage: ncsim run PROG [options]\n"
    "\n"
    "Simulate a program (.nca text or .ncx binary) on every core it uses.\n",
    run_options,
    28,
    "exit codes: 0 success, 1 program error (run-time error, deadlock), 2 usage or assembly\n"
    "error, 3 input/output error, 4 internal error.\n",
    1,
    1,
    "expected one program",
};

/* The command line into *a: -1 to go on, else the exit code (0 after --help). */
static int parse_args(int argc, char **argv, run_args_t *a)
{
    int first;
    int rc = cli_parse(&run_command, argc, argv, a, &first);
    if (rc < 0)
        a->path = argv[first];
    return rc;
}

/* ---- before the run ------------------------------------------------------------------------ */

/* Every file this run writes, registered now: a run that fails from here on leaves none of
 * them behind (docs/cli.md, "Output files"). *cfg_path: STATS.config.json, the resolved
 * architecture config beside the statistics (gem5's config.json). 0 or the exit code. */
static int register_outputs(run_args_t *a, cli_outputs_t *outputs, char **cfg_path)
{
    for (int i = 0; i < a->nouts; i++)
        if (cli_outputs_add(outputs, a->outs[i].path, "--out"))
            return 2;
    if (a->trace_path && cli_outputs_add(outputs, a->trace_path, "--trace"))
        return 2;
    if (cli_dumps_register(&a->dumps, outputs))
        return 2;
    if (a->stats_path && strcmp(a->stats_path, "-") != 0) {
        size_t sl = strlen(a->stats_path);
        *cfg_path = malloc(sl + 16);
        if (!*cfg_path) {
            fputs("ncsim run: out of host memory\n", stderr);
            return 4;
        }
        size_t base = sl >= 5 && strcmp(a->stats_path + sl - 5, ".json") == 0 ? sl - 5 : sl;
        memcpy(*cfg_path, a->stats_path, base);
        strcpy(*cfg_path + base, ".config.json");
        if (cli_outputs_add(outputs, a->stats_path, "--stats") ||
            cli_outputs_add(outputs, *cfg_path, "--stats config"))
            return 2;
    }
    if (a->trace_filter && !a->trace_path) {
        fputs("ncsim run: --trace-start, --trace-end and --trace-engines need --trace FILE\n",
              stderr);
        return 2;
    }
    if (a->trace_path && trc_format_for_path(a->trace_path) == TRC_FORMAT_COUNT) {
        fprintf(stderr, "ncsim run: --trace %s: the name must end in .json, .json.gz or "
                        ".pftrace\n",
                a->trace_path);
        return 2;
    }
    /* never removed on failure: they are also inputs */
    for (int i = 0; i < a->nins; i++)
        cli_outputs_protect(outputs, a->ins[i].path);
    cli_outputs_protect(outputs, a->path);
    if (a->arch_name)
        cli_outputs_protect(outputs, a->arch_name);
    return 0;
}

/* The combinations of options that cannot work, once the program is known. 0 or 2. */
static int check_modes(run_args_t *a, const ncsim_program_t *prog)
{
    char err[512];
    if (a->timing_only && (a->nins || a->nouts)) {
        fprintf(stderr, "ncsim run: --in and --out need a functional run (drop "
                        "--timing-only)\n");
        return 2;
    }
    if (cli_dumps_resolve(&a->dumps, prog, a->timing_only, err, sizeof err)) {
        fprintf(stderr, "ncsim run: %s\n", err);
        return 2;
    }
    if (a->timing_only && (a->checks & NCSIM_CHECK_NAN)) {
        fputs("ncsim run: --check nan needs a functional run (drop --timing-only)\n", stderr);
        return 2;
    }
    return 0;
}

/* Every --in and --out names a declared HBM tensor of the right role, no input is bound
 * twice, and (unless --random-inputs) every input is bound. 0 or 2. */
static int resolve_bindings(run_args_t *a, const ncsim_program_t *prog)
{
    uint32_t nt = ncsim_program_tensor_count(prog);
    uint8_t *bound = calloc(nt + 1, 1);
    if (!bound)
        return cli_exit(NCSIM_NOMEM);
    int rc = 0;
    for (int i = 0; i < a->nins + a->nouts && !rc; i++) {
        int is_in = i < a->nins;
        binding_t *b = is_in ? &a->ins[i] : &a->outs[i - a->nins];
        ncsim_tensor_info_t T;
        int n = (int)b->name_len;
        b->tensor = cli_find_hbm_tensor(prog, b->name, b->name_len, &T);
        if (b->tensor < 0) {
            fprintf(stderr, "ncsim run: --%s %.*s: the program declares no HBM tensor '%.*s'\n",
                    is_in ? "in" : "out", n, b->name, n, b->name);
            rc = 2;
            break;
        }
        if (is_in && T.role != NCSIM_INPUT && T.role != NCSIM_INOUT) {
            fprintf(stderr, "ncsim run: --in %.*s: tensor '%.*s' is %s, not input or inout\n", n,
                    b->name, n, b->name, ncsim_role_name(T.role));
            rc = 2;
        }
        if (!is_in && T.role != NCSIM_OUTPUT && T.role != NCSIM_INOUT) {
            fprintf(stderr, "ncsim run: --out %.*s: tensor '%.*s' is %s, not output or inout\n",
                    n, b->name, n, b->name, ncsim_role_name(T.role));
            rc = 2;
        }
        if (is_in && bound[b->tensor]) {
            fprintf(stderr, "ncsim run: tensor '%.*s' is bound twice\n", n, b->name);
            rc = 2;
        }
        if (is_in)
            bound[b->tensor] = 1;
    }
    for (uint32_t t = 0; !rc && !a->timing_only && !a->have_random && t < nt; t++) {
        ncsim_tensor_info_t T;
        ncsim_program_tensor(prog, t, &T);
        if (T.memory == NCSIM_HBM && !bound[t] &&
            (T.role == NCSIM_INPUT || T.role == NCSIM_INOUT)) {
            fprintf(stderr, "ncsim run: input tensor '%s' is not bound: give --in %s=FILE.npy "
                            "or --random-inputs SEED\n",
                    T.name, T.name);
            rc = 2;
        }
    }
    free(bound);
    return rc;
}

static void print_note(void *ctx, const char *note)
{
    (void)ctx;
    fprintf(stderr, "ncsim run: note: %s\n", note);
}

/* The simulator with its inputs bound (--in, then --random-inputs). 0 or the exit code. */
static int start_sim(run_args_t *a, const ncsim_program_t *prog, const ncsim_arch_t *arch,
                     cli_outputs_t *outputs, ncsim_sim_t **s)
{
    ncsim_options_t so;
    ncsim_options_init(&so);
    so.timing_only = a->timing_only;
    so.stochastic_rounding = a->stochastic;
    so.seed = a->seed;
    so.checks = a->checks;
    so.program_name = a->path;
    if (a->trace_path) {
        so.trace_path = cli_outputs_path(outputs, a->trace_path);
        so.trace_start_ns = a->trace_start_ns;
        so.trace_end_ns = a->trace_end_ns;
        so.trace_engines = a->trace_engines;
    }
    ncsim_status_t st = ncsim_sim_create(prog, arch, &so, s);
    if (st == NCSIM_OK && !a->quiet)
        ncsim_sim_set_notes(*s, print_note, NULL);
    if (st == NCSIM_OK)
        st = cli_dumps_hook(&a->dumps, *s);
    for (int i = 0; st == NCSIM_OK && i < a->nins; i++)
        st = ncsim_sim_load_npy(*s, (uint32_t)a->ins[i].tensor, a->ins[i].path);
    if (st == NCSIM_OK && !a->timing_only && a->have_random)
        st = ncsim_sim_random_inputs(*s, a->random_seed);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim run: %s\n", ncsim_last_error());
        return cli_exit(st);
    }
    return 0;
}

/* ---- the run: progress, and signals that stop it with a complete trace ---------------------- */

static ncsim_sim_t *volatile running;
static volatile sig_atomic_t stop_signal;

/* SIGINT/SIGTERM/SIGHUP while tracing: stop between slices of the run and close the trace
 * (outside the run, isa/file.c's handler removes the outputs and ends the process). */
static void on_stop_signal(int sig)
{
    stop_signal = sig;
    ncsim_sim_cancel(running); /* async-signal-safe */
}

/* on_stop_signal for SIG, unless SIG is ignored (nohup): the previous action into *old. */
static void catch_stop_signal(int sig, const struct sigaction *sa, struct sigaction *old)
{
    if (sigaction(sig, NULL, old) == 0 && !(old->sa_flags & SA_SIGINFO) &&
        old->sa_handler == SIG_IGN)
        return;
    sigaction(sig, sa, old);
}

typedef struct progress_ctx {
    int tty;
    int shown;
} progress_ctx_t;

/* Progress on stderr: redrawn a few times a second on a terminal, one line every ~10 s
 * otherwise. */
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

/* Run to the end (the library's driver), with progress when asked and, while tracing, the
 * stop signals caught. */
static ncsim_status_t run_sim(const run_args_t *a, ncsim_sim_t *s)
{
    progress_ctx_t pc = {isatty(STDERR_FILENO), 0};
    int show = !a->quiet && (a->progress == PROGRESS_ALWAYS ||
                             (a->progress == PROGRESS_AUTO && pc.tty));
    if (show)
        ncsim_sim_set_progress(s, show_progress, &pc, pc.tty ? 0.25 : 10.0);
    struct sigaction sa_new, sa_int, sa_term, sa_hup;
    if (a->trace_path) {
        running = s;
        memset(&sa_new, 0, sizeof sa_new);
        sa_new.sa_handler = on_stop_signal;
        sigemptyset(&sa_new.sa_mask);
        catch_stop_signal(SIGINT, &sa_new, &sa_int);
        catch_stop_signal(SIGTERM, &sa_new, &sa_term);
        catch_stop_signal(SIGHUP, &sa_new, &sa_hup);
    }
    ncsim_status_t st = ncsim_sim_run(s);
    if (st == NCSIM_CANCELLED || st == NCSIM_PROGRAM)
        ncsim_sim_close_trace(s); /* a failure to finish it is reported by the run's error */
    if (a->trace_path) {
        sigaction(SIGINT, &sa_int, NULL);
        sigaction(SIGTERM, &sa_term, NULL);
        sigaction(SIGHUP, &sa_hup, NULL);
        running = NULL;
    }
    if (pc.shown && pc.tty)
        fputs("\r\033[K", stderr);
    return st;
}

/* ---- after the run ------------------------------------------------------------------------- */

static int write_text(const char *path, const char *text)
{
    if (strcmp(path, "-") == 0)
        return fputs(text, stdout) >= 0 && fflush(stdout) == 0 ? 0 : -1;
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    return fclose(f) != 0 || bad ? -1 : 0;
}

/* --out files, --stats and its config beside it. Returns the exit code so far, updated. */
static int write_results(run_args_t *a, ncsim_sim_t *s, cli_outputs_t *outputs,
                         const char *cfg_path, int rc)
{
    for (int i = 0; !rc && i < a->nouts; i++) {
        ncsim_status_t st = ncsim_sim_save_npy(s, (uint32_t)a->outs[i].tensor,
                                               cli_outputs_path(outputs, a->outs[i].path));
        if (st == NCSIM_IO)
            fprintf(stderr, "ncsim run: cannot write '%s'\n", a->outs[i].path);
        else if (st != NCSIM_OK)
            fprintf(stderr, "ncsim run: %s\n", ncsim_last_error());
        if (st != NCSIM_OK)
            rc = cli_exit(st);
        else
            cli_outputs_mark_written(outputs, a->outs[i].path);
    }
    if (!a->stats_path)
        return rc;
    const char *files[2] = {a->stats_path, cfg_path};
    for (int i = 0; i < 2; i++) {
        char *json = NULL;
        ncsim_status_t st = i == 0 ? ncsim_sim_stats_json(s, &json)
                                   : ncsim_sim_arch_json(s, &json);
        if (i == 1 && (!cfg_path || st != NCSIM_OK)) {
            ncsim_free(json);
            continue;
        }
        if (st != NCSIM_OK || write_text(cli_outputs_path(outputs, files[i]), json)) {
            fprintf(stderr, "ncsim run: cannot write %s: %s\n", files[i],
                    st == NCSIM_OK ? strerror(errno) : "out of memory");
            if (!rc)
                rc = cli_exit(st == NCSIM_OK ? NCSIM_IO : NCSIM_NOMEM);
        } else {
            cli_outputs_mark_written(outputs, files[i]);
        }
        ncsim_free(json);
    }
    return rc;
}

/* What the run's outcome means for the exit code and the messages: its error, dumps,
 * --check findings, the statistics' record of a failure. Returns the exit code so far. */
static int finish_run(run_args_t *a, ncsim_sim_t *s, ncsim_status_t st, cli_outputs_t *outputs)
{
    int rc = 0;
    const char *run_error = ncsim_sim_error(s); /* located: core, engine, line */
    if (st != NCSIM_OK && *run_error) {
        fputs(run_error, stderr);
        rc = cli_exit(st);
    } else if (st != NCSIM_OK) {
        char named[2048];
        fprintf(stderr, "ncsim run: %s\n",
                cli_outputs_message(outputs, ncsim_last_error(), named, sizeof named));
        rc = cli_exit(st);
    } else if (a->trace_path) {
        cli_outputs_mark_written(outputs, a->trace_path);
    }
    if (st == NCSIM_PROGRAM && a->trace_path)
        cli_outputs_mark_written(outputs, a->trace_path);
    if (a->dumps.n) { /* also after a run-time error: the state it stopped in */
        int drc = cli_dumps_finish(&a->dumps, s);
        if (drc && !rc)
            rc = drc;
    }
    if (a->checks) { /* findings of --check: stderr, exit code 1 */
        ncsim_sim_findings_print(s, stderr, 50);
        if ((ncsim_sim_finding_count(s) || ncsim_sim_findings_dropped(s)) && !rc)
            rc = 1;
    }
    if (rc) { /* a failed run, as --stats records it: the first line of the message */
        char *why = cli_escape(st != NCSIM_OK && *run_error ? run_error
                               : st != NCSIM_OK ? ncsim_last_error()
                                                : "ncsim check findings (--check); see stderr");
        ncsim_sim_set_failure(s, why ? why : "failed");
        free(why);
    }
    return rc;
}

int cli_run(int argc, char **argv)
{
    static run_args_t a; /* big (the bindings); one run per process */
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    static cli_outputs_t outputs;
    cli_outputs_init(&outputs, "run");
    char *cfg_path = NULL;
    ncsim_program_t *prog = NULL;
    ncsim_arch_t *arch = NULL;
    ncsim_sim_t *s = NULL;
    int run_done = 0; /* the simulation ran (to its end, an error, a deadlock or a signal) */
    rc = register_outputs(&a, &outputs, &cfg_path);
    if (!rc)
        rc = cli_load("run", a.path, a.arch_name, a.sets, a.nsets, &prog, &arch);
    if (!rc)
        rc = check_modes(&a, prog);
    if (!rc)
        rc = resolve_bindings(&a, prog);
    /* every output path, before the simulation: a typo costs nothing */
    if (!rc && cli_outputs_validate(&outputs))
        rc = 3;
    if (!rc)
        rc = start_sim(&a, prog, arch, &outputs, &s);
    if (!rc) {
        ncsim_status_t st = run_sim(&a, s);
        run_done = 1;
        if (st == NCSIM_CANCELLED && stop_signal) {
            fprintf(stderr, "ncsim run: stopped by signal %d at %.3f ns; the trace is complete "
                            "up to there\n",
                    (int)stop_signal, ncsim_sim_now_ns(s));
            cli_outputs_mark_written(&outputs, a.trace_path);
            rc = 128 + (int)stop_signal;
        } else {
            rc = finish_run(&a, s, st, &outputs);
            rc = write_results(&a, s, &outputs, cfg_path, rc);
            if (!a.quiet && (st == NCSIM_OK || ncsim_sim_finished(s)))
                ncsim_sim_print_summary(s, stdout);
        }
    }
    ncsim_sim_free(s); /* the trace file finished before it is put into place or removed */
    s = NULL;
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
    ncsim_program_free(prog);
    ncsim_arch_free(arch);
    return rc;
}
