/*
 * cmd_validate.c -- `ncsim validate MANIFEST.json` (compare simulated figures with measured
 * ones) and `ncsim fit MANIFEST.json --key K=LO:HI ...` (fit config keys to them); the
 * manifest format is in docs/validation.md, the library in explore/validate.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "outputs.h"
#include "validate.h"

static int parse_jobs(const char *cmd, const char *s, unsigned *jobs)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < 0 || v > 4096) {
        fprintf(stderr, "ncsim %s: --jobs wants a number of processes (0 to 4096), not '%s'\n",
                cmd, s);
        return -1;
    }
    if (v == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        v = n > 0 ? n : 1;
    }
    *jobs = (unsigned)v;
    return 0;
}

enum { MAX_SETS = 256 };

/* ---- options: one row each (cli/options.h); validate and fit share the rows they have in
 * common ----------------------------------------------------------------------------------- */

typedef struct vf_args {
    const char *cmd; /* "validate" or "fit", for messages */
    const char *manifest, *arch, *csv, *png, *output, *name;
    const char *sets[MAX_SETS], *only[MAX_SETS];
    size_t nsets, nonly;
    sim_fit_key_t keys[SIM_FIT_MAX_KEYS];
    char keybuf[SIM_FIT_MAX_KEYS][128];
    size_t nkeys;
    unsigned jobs, max_evals;
    int quiet;
} vf_args_t;

static int opt_jobs(void *p, const char *name, const char *arg)
{
    vf_args_t *a = p;
    (void)name;
    return parse_jobs(a->cmd, arg, &a->jobs);
}

static int opt_text(void *p, const char *name, const char *arg)
{
    vf_args_t *a = p;
    if (strcmp(name, "arch") == 0)
        a->arch = arg;
    else if (strcmp(name, "csv") == 0)
        a->csv = arg;
    else if (strcmp(name, "png") == 0)
        a->png = arg;
    else if (strcmp(name, "output") == 0)
        a->output = arg;
    else
        a->name = arg;
    return 0;
}

static int opt_list(void *p, const char *name, const char *arg)
{
    vf_args_t *a = p;
    int set = strcmp(name, "set") == 0;
    size_t *n = set ? &a->nsets : &a->nonly;
    if (*n == MAX_SETS) {
        fprintf(stderr, "ncsim %s: too many --%s options\n", a->cmd, name);
        return -1;
    }
    (set ? a->sets : a->only)[(*n)++] = arg;
    return 0;
}

static int opt_key(void *p, const char *name, const char *arg)
{
    vf_args_t *a = p;
    (void)name;
    char err[1024];
    if (a->nkeys == SIM_FIT_MAX_KEYS) {
        fprintf(stderr, "ncsim fit: at most %d --key options\n", SIM_FIT_MAX_KEYS);
        return -1;
    }
    if (sim_fit_parse_key(arg, a->keybuf[a->nkeys], sizeof a->keybuf[a->nkeys],
                          &a->keys[a->nkeys], err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "ncsim fit: %s\n", err);
        return -1;
    }
    a->nkeys++;
    return 0;
}

static int opt_max_evals(void *p, const char *name, const char *arg)
{
    vf_args_t *a = p;
    (void)name;
    uint64_t v;
    if (cli_parse_u64(arg, &v) || v < 2 || v > 1000000) {
        fprintf(stderr, "ncsim fit: --max-evals wants a number from 2 to 1000000, not '%s'\n",
                arg);
        return -1;
    }
    a->max_evals = (unsigned)v;
    return 0;
}

static int opt_quiet(void *p, const char *name, const char *arg)
{
    (void)name;
    (void)arg;
    ((vf_args_t *)p)->quiet = 1;
    return 0;
}

static const cli_option_t validate_options[] = {
    {"arch", 0, "NAME|FILE", opt_text, "run every entry on this architecture instead of its own"},
    {"set", 0, "KEY=VALUE", opt_list,
     "override a config key for every entry (after the entry's own\n"
     "\"set\"; repeatable)"},
    {"csv", 0, "FILE", opt_text, "also write the table as CSV ('-' for stdout)"},
    {"png", 0, "FILE", opt_text, "also draw simulated against measured (log-log, y = x, band)"},
    {"only", 0, "TEXT", opt_list,
     "run only the entries whose id contains TEXT (repeatable; the\n"
     "entries they are relative to run too)"},
    {"jobs", 'j', "N", opt_jobs, "run N entries at a time in worker processes (0: one per CPU)"},
    {"quiet", 'q', NULL, opt_quiet, "print only the entries outside their band and the summary"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t validate_command = {
    "validate",
    "usage: ncsim validate MANIFEST.json [options]\n"
    "\n"
    "Run every entry of a manifest of measurements in timing-only mode and compare the\n"
    "simulated figure with the measured one: per entry the measured and simulated values,\n"
    "their ratio, the error and whether it is inside the entry's band; then the\n"
    "geometric-mean error (exp(mean |ln(sim/measured)|) - 1) and the worst entry.\n"
    "The manifest format is described in docs/validation.md. A manifest runs the commands\n"
    "its \"generate\" entries name, as you: run only manifests you trust like a script.\n",
    validate_options,
    22,
    "exit codes: 0 every entry inside its band (or outside it and marked known_miss in the\n"
    "manifest), 1 some other entry outside its band, a known_miss entry now inside it, or an\n"
    "entry failing to run, 2 usage error or bad manifest (the message names the entry and key; also an entry\n"
    "whose figure its run does not have), 3 I/O error.\n",
    1,
    1,
    "expected one manifest file",
};

static const cli_option_t fit_options[] = {
    {"key", 0, "KEY=LO:HI", opt_key,
     "a key to fit and its bounds, e.g. dma.fixed_cost_ns=200:3000\n"
     "(repeatable, at most 16)"},
    {"arch", 0, "NAME|FILE", opt_text,
     "the base config (default trn1); also replaces every entry's own\n"
     "arch during the fit"},
    {"set", 0, "KEY=VALUE", opt_list, "hold a key at a value for every entry (repeatable)"},
    {"output", 'o', "FILE", opt_text,
     "the fitted config (default: NAME.fitted.json for MANIFEST\n"
     "NAME.json, in the current directory)"},
    {"name", 0, "NAME", opt_text, "the fitted config's name (default: the output file's stem)"},
    {"max-evals", 0, "N", opt_max_evals, "at most N simulations of the manifest (default 200)"},
    {"jobs", 'j', "N", opt_jobs, "run N entries at a time in worker processes (0: one per CPU)"},
    {"quiet", 'q', NULL, opt_quiet, "no per-evaluation progress on stderr"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t fit_command = {
    "fit",
    "usage: ncsim fit MANIFEST.json --key KEY=LO:HI [--key ...] [options]\n"
    "\n"
    "Fit config keys within their bounds so that the manifest's entries with \"fit\": true\n"
    "match their measurements: minimise the sum over them of weight x ln(simulated /\n"
    "measured)^2 with NLopt's derivative-free BOBYQA (Sbplx for one key), starting from the\n"
    "base config's values clamped to the bounds. Deterministic. Prints the table before and\n"
    "after, and writes the fitted config (the base, the --set overrides and the fitted keys,\n"
    "each with its source) as a file that --arch accepts. Like validate, it runs the\n"
    "manifest's \"generate\" commands as you.\n",
    fit_options,
    22,
    "exit codes: 0 fitted, 2 usage error or bad manifest, 3 I/O error.\n",
    1,
    1,
    "expected one manifest file",
};

/* The command line of validate or fit into *a: -1 to go on, else the exit code. */
static int vf_parse(const cli_command_t *cmd, int argc, char **argv, vf_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd->name;
    a->jobs = 1;
    int first;
    int rc = cli_parse(cmd, argc, argv, a, &first);
    if (rc < 0)
        a->manifest = argv[first];
    return rc;
}

/* The output files of validate or fit, checked before anything runs, written atomically and
 * removed when the command fails (docs/cli.md). 0 or the exit code. */
static int vf_outputs(cli_outputs_t *outputs, const vf_args_t *a)
{
    cli_outputs_init(outputs, a->cmd);
    if ((a->csv && cli_outputs_add(outputs, a->csv, "--csv")) ||
        (a->png && cli_outputs_add(outputs, a->png, "--png")) ||
        (a->output && cli_outputs_add(outputs, a->output, "--output"))) {
        cli_outputs_free(outputs);
        return cli_exit(NCSIM_NOMEM);
    }
    cli_outputs_protect(outputs, a->manifest);
    if (a->output && a->arch)
        cli_outputs_protect(outputs, a->arch);
    if (cli_outputs_validate(outputs)) {
        cli_outputs_free(outputs);
        return cli_exit(NCSIM_IO);
    }
    return 0;
}

/* Failed: remove the outputs, free what there is; returns rc. */
static int vf_fail(cli_outputs_t *outputs, sim_validate_manifest_t *m, void *res, int rc)
{
    cli_outputs_abort(outputs);
    cli_outputs_free(outputs);
    free(res);
    sim_validate_free(m);
    return rc;
}

/* --csv and --png of validate: the result also when entries leave their band (exit 1).
 * 0 or the exit code. */
static int validate_files(cli_outputs_t *outputs, const vf_args_t *a,
                          const sim_validate_manifest_t *m, const sim_validate_result_t *res)
{
    char err[4096];
    ncsim_status_t st = NCSIM_OK;
    if (a->csv) {
        st = sim_validate_write_csv(cli_outputs_path(outputs, a->csv), m, res, err, sizeof err);
        if (st == NCSIM_OK)
            cli_outputs_mark_written(outputs, a->csv);
    }
    if (st == NCSIM_OK && a->png) {
        st = sim_validate_plot(cli_outputs_path(outputs, a->png), m, res, err, sizeof err);
        if (st == NCSIM_OK)
            cli_outputs_mark_written(outputs, a->png);
    }
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim validate: %s\n", err);
        return cli_exit(st);
    }
    return 0;
}

int cli_validate(int argc, char **argv)
{
    vf_args_t a;
    int rc = vf_parse(&validate_command, argc, argv, &a);
    if (rc >= 0)
        return rc;
    char err[4096];
    static cli_outputs_t outputs;
    if ((rc = vf_outputs(&outputs, &a)))
        return rc;
    sim_validate_manifest_t *m = NULL;
    ncsim_status_t st = sim_validate_load(a.manifest, &m, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim validate: %s\n", err);
        return vf_fail(&outputs, NULL, NULL, cli_exit(st));
    }
    sim_validate_options_t o = {a.arch, a.sets, a.nsets, NULL, 0, a.jobs, 0, a.only, a.nonly};
    sim_validate_result_t *res = calloc(m->nentries, sizeof *res);
    if (!res)
        return vf_fail(&outputs, m, NULL, cli_exit(NCSIM_NOMEM));
    st = sim_validate_run(m, &o, res, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim validate: %s\n", err);
        return vf_fail(&outputs, m, res, cli_exit(st));
    }
    if (!a.quiet) {
        printf("%s", a.manifest);
        if (m->name[0])
            printf(" (%s)", m->name);
        printf(": %zu entr%s%s%s\n", m->nentries, m->nentries == 1 ? "y" : "ies",
               a.arch ? ", all on " : "", a.arch ? a.arch : "");
    }
    sim_validate_summary_t s;
    sim_validate_summarise(m, res, &s);
    if (a.nonly && s.ran == 0) {
        fprintf(stderr, "ncsim validate: %s: no entry id contains '%s'%s\n", a.manifest,
                a.only[0], a.nonly > 1 ? " (or the other --only texts)" : "");
        return vf_fail(&outputs, m, res, 2);
    }
    sim_validate_print(stdout, m, res, a.quiet);
    fflush(stdout);
    if (s.failed || s.outside || s.stale_known)
        rc = 1;
    /* an entry whose figure cannot be read from its run (no such instruction ran, no such
     * core) is a mistake in the manifest */
    for (size_t i = 0; i < m->nentries; i++)
        if (res[i].ran && (res[i].status == NCSIM_USAGE || res[i].status == NCSIM_ASSEMBLY))
            rc = 2;
    int frc = validate_files(&outputs, &a, m, res);
    if (frc)
        return vf_fail(&outputs, m, res, frc);
    if (cli_outputs_commit(&outputs))
        rc = cli_exit(NCSIM_IO);
    cli_outputs_free(&outputs);
    free(res);
    sim_validate_free(m);
    return rc;
}

/* NAME.fitted.json for MANIFEST path .../NAME.json */
static void default_output(const char *manifest, char *buf, size_t len)
{
    const char *slash = strrchr(manifest, '/');
    const char *base = slash ? slash + 1 : manifest;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".json") == 0)
        n -= 5;
    snprintf(buf, len, "%.*s.fitted.json", (int)n, base);
}

static void stem_of(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".json") == 0)
        n -= 5;
    snprintf(buf, len, "%.*s", (int)n, base);
}

/* Fitted keys apply after every entry's own "set": say so where that hides a choice. */
static void fit_notes(const sim_validate_manifest_t *m, const vf_args_t *a)
{
    for (size_t i = 0; i < m->nentries; i++)
        for (size_t j = 0; j < m->entries[i].nsets; j++)
            for (size_t k = 0; k < a->nkeys; k++) {
                size_t kl = strlen(a->keys[k].key);
                if (m->entries[i].fit && strncmp(m->entries[i].sets[j], a->keys[k].key, kl) == 0 &&
                    m->entries[i].sets[j][kl] == '=')
                    fprintf(stderr, "ncsim fit: note: entry '%s' sets %s; the fit replaces it "
                                    "(fitted keys apply after the entries' own \"set\")\n",
                            m->entries[i].id, m->entries[i].sets[j]);
            }
}

/* The tables before and after the fit, over every entry; assign[k] the fitted values as
 * --set overrides. 0 or the exit code. */
static int fit_tables(sim_validate_manifest_t *m, const sim_fit_options_t *fo,
                      const sim_fit_outcome_t *out, sim_validate_result_t *res,
                      char assign[][160])
{
    char err[4096];
    const char *extra[SIM_FIT_MAX_KEYS];
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < fo->nkeys; k++) {
            sim_fit_assignment(fo->keys[k].key, pass ? out->best[k] : out->start[k], assign[k],
                               160);
            extra[k] = assign[k];
        }
        sim_validate_options_t ro = fo->run;
        ro.extra_sets = extra;
        ro.nextra_sets = fo->nkeys;
        ncsim_status_t st = sim_validate_run(m, &ro, res, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim fit: %s\n", err);
            return cli_exit(st);
        }
        printf("%s (%s):\n", pass ? "after the fit" : "before the fit",
               pass ? "fitted values" : "base values clamped to the bounds");
        sim_validate_print(stdout, m, res, 0);
        printf("fit cost (sum of weight x ln(sim/measured)^2 over fit entries): %.6g\n\n",
               pass ? out->cost_after : out->cost_before);
    }
    return 0;
}

/* The fitted keys, and the fitted config written to --output. 0 or the exit code. */
static int fit_result(cli_outputs_t *outputs, const vf_args_t *a, sim_validate_manifest_t *m,
                      const sim_fit_options_t *fo, const sim_fit_outcome_t *out,
                      char assign[][160])
{
    printf("%-40s %14s %14s %14s %14s\n", "key", "start", "fitted", "low", "high");
    for (size_t k = 0; k < a->nkeys; k++) {
        const sim_fit_key_t *key = &a->keys[k];
        double span = key->hi - key->lo;
        printf("%-40s %14.6g %14.6g %14.6g %14.6g%s\n", key->key, out->start[k], out->best[k],
               key->lo, key->hi,
               (out->best[k] <= key->lo + 1e-9 * span || out->best[k] >= key->hi - 1e-9 * span)
                   ? "  (at a bound)"
                   : "");
    }
    printf("%u evaluations; %s\n", out->evals, out->stop);
    printf("the same as overrides:");
    for (size_t k = 0; k < a->nkeys; k++)
        printf(" --set %s", assign[k]);
    putchar('\n');
    char *json = sim_fit_config_json(m, fo, out, a->name);
    if (!json)
        return cli_exit(NCSIM_NOMEM);
    int rc = 0;
    if (ncsim_write_file(cli_outputs_path(outputs, a->output), json, strlen(json))) {
        fprintf(stderr, "ncsim fit: cannot write %s: %s\n", a->output, strerror(errno));
        rc = cli_exit(NCSIM_IO);
    } else {
        cli_outputs_mark_written(outputs, a->output);
    }
    free(json);
    return rc;
}

int cli_fit(int argc, char **argv)
{
    static vf_args_t a;
    int rc = vf_parse(&fit_command, argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (a.nkeys == 0) {
        fputs("ncsim fit: give at least one --key KEY=LO:HI\n", stderr);
        cli_print_help(&fit_command, stderr);
        return 2;
    }
    char outbuf[1024], namebuf[128], err[4096];
    if (!a.output) {
        default_output(a.manifest, outbuf, sizeof outbuf);
        a.output = outbuf;
    }
    if (!a.name) {
        stem_of(a.output, namebuf, sizeof namebuf);
        a.name = namebuf;
    }
    static cli_outputs_t outputs;
    if ((rc = vf_outputs(&outputs, &a)))
        return rc;
    sim_validate_manifest_t *m = NULL;
    ncsim_status_t st = sim_validate_load(a.manifest, &m, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim fit: %s\n", err);
        return vf_fail(&outputs, NULL, NULL, cli_exit(st));
    }
    fit_notes(m, &a);
    sim_fit_options_t fo;
    memset(&fo, 0, sizeof fo);
    fo.run.arch = a.arch;
    fo.run.sets = a.sets;
    fo.run.nsets = a.nsets;
    fo.run.jobs = a.jobs;
    fo.keys = a.keys;
    fo.nkeys = a.nkeys;
    fo.max_evals = a.max_evals;
    fo.progress = a.quiet ? NULL : stderr;
    sim_fit_outcome_t out;
    st = sim_fit_run(m, &fo, &out, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim fit: %s\n", err);
        return vf_fail(&outputs, m, NULL, cli_exit(st));
    }
    sim_validate_result_t *res = calloc(m->nentries, sizeof *res);
    char assign[SIM_FIT_MAX_KEYS][160];
    if (!res)
        return vf_fail(&outputs, m, NULL, cli_exit(NCSIM_NOMEM));
    rc = fit_tables(m, &fo, &out, res, assign);
    if (rc == 0)
        rc = fit_result(&outputs, &a, m, &fo, &out, assign);
    if (rc != 0)
        return vf_fail(&outputs, m, res, rc);
    if (cli_outputs_commit(&outputs) == 0) {
        printf("wrote %s (use it with --arch %s)\n", a.output, a.output);
    } else {
        rc = cli_exit(NCSIM_IO);
        cli_outputs_abort(&outputs);
    }
    cli_outputs_free(&outputs);
    free(res);
    sim_validate_free(m);
    return rc;
}
