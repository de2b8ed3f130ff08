/*
 * cmd_validate.c -- `ncsim validate MANIFEST.json` (compare simulated figures with measured
 * ones) and `ncsim fit MANIFEST.json --key K=LO:HI ...` (fit config keys to them); the
 * manifest format is in docs/validation.md, the library in explore/validate.h.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "outputs.h"
#include "validate.h"

static const char usage_validate[] =
    "usage: ncsim validate MANIFEST.json [options]\n"
    "\n"
    "Run every entry of a manifest of measurements in timing-only mode and compare the\n"
    "simulated figure with the measured one: per entry the measured and simulated values,\n"
    "their ratio, the error and whether it is inside the entry's band; then the\n"
    "geometric-mean error (exp(mean |ln(sim/measured)|) - 1) and the worst entry.\n"
    "The manifest format is described in docs/validation.md. A manifest runs the commands\n"
    "its \"generate\" entries name, as you: run only manifests you trust like a script.\n"
    "  --arch NAME|FILE    run every entry on this architecture instead of its own\n"
    "  --set KEY=VALUE     override a config key for every entry (after the entry's own\n"
    "                      \"set\"; repeatable)\n"
    "  --csv FILE          also write the table as CSV ('-' for stdout)\n"
    "  --png FILE          also draw simulated against measured (log-log, y = x, band)\n"
    "  --only TEXT         run only the entries whose id contains TEXT (repeatable; the\n"
    "                      entries they are relative to run too)\n"
    "  -j, --jobs N        run N entries at a time in worker processes (0: one per CPU)\n"
    "  -q, --quiet         print only the entries outside their band and the summary\n"
    "exit codes: 0 every entry inside its band (or outside it and marked known_miss in the\n"
    "manifest), 1 some other entry outside its band, a known_miss entry now inside it, or an\n"
    "entry failing to run, 2 usage error or bad manifest (the message names the entry and key; also an entry\n"
    "whose figure its run does not have), 3 I/O error.\n";

static const char usage_fit[] =
    "usage: ncsim fit MANIFEST.json --key KEY=LO:HI [--key ...] [options]\n"
    "\n"
    "Fit config keys within their bounds so that the manifest's entries with \"fit\": true\n"
    "match their measurements: minimise the sum over them of weight x ln(simulated /\n"
    "measured)^2 with NLopt's derivative-free BOBYQA (Sbplx for one key), starting from the\n"
    "base config's values clamped to the bounds. Deterministic. Prints the table before and\n"
    "after, and writes the fitted config (the base, the --set overrides and the fitted keys,\n"
    "each with its source) as a file that --arch accepts. Like validate, it runs the\n"
    "manifest's \"generate\" commands as you.\n"
    "  --key KEY=LO:HI     a key to fit and its bounds, e.g. dma.fixed_cost_ns=200:3000\n"
    "                      (repeatable, at most 16)\n"
    "  --arch NAME|FILE    the base config (default trn1); also replaces every entry's own\n"
    "                      arch during the fit\n"
    "  --set KEY=VALUE     hold a key at a value for every entry (repeatable)\n"
    "  -o, --output FILE   the fitted config (default: NAME.fitted.json for MANIFEST\n"
    "                      NAME.json, in the current directory)\n"
    "  --name NAME         the fitted config's name (default: the output file's stem)\n"
    "  --max-evals N       at most N simulations of the manifest (default 200)\n"
    "  -j, --jobs N        run N entries at a time in worker processes (0: one per CPU)\n"
    "  -q, --quiet         no per-evaluation progress on stderr\n"
    "exit codes: 0 fitted, 2 usage error or bad manifest, 3 I/O error.\n";

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

int cli_validate(int argc, char **argv)
{
    enum { O_ARCH = 256, O_SET, O_CSV, O_PNG, O_ONLY };
    static const struct option opts[] = {{"arch", required_argument, 0, O_ARCH},
                                         {"only", required_argument, 0, O_ONLY},
                                         {"set", required_argument, 0, O_SET},
                                         {"csv", required_argument, 0, O_CSV},
                                         {"png", required_argument, 0, O_PNG},
                                         {"jobs", required_argument, 0, 'j'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *sets[MAX_SETS], *only[MAX_SETS];
    size_t nsets = 0, nonly = 0;
    const char *arch = NULL, *csv = NULL, *png = NULL;
    unsigned jobs = 1;
    int quiet = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "j:qh", opts, NULL)) != -1) {
        switch (c) {
        case O_ARCH: arch = optarg; break;
        case O_ONLY:
            if (nonly == MAX_SETS) {
                fputs("ncsim validate: too many --only options\n", stderr);
                return 2;
            }
            only[nonly++] = optarg;
            break;
        case O_SET:
            if (nsets == MAX_SETS) {
                fputs("ncsim validate: too many --set options\n", stderr);
                return 2;
            }
            sets[nsets++] = optarg;
            break;
        case O_CSV: csv = optarg; break;
        case O_PNG: png = optarg; break;
        case 'j':
            if (parse_jobs("validate", optarg, &jobs))
                return 2;
            break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_validate, stdout); return 0;
        default: fputs(usage_validate, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "ncsim validate: expected one manifest file\n%s", usage_validate);
        return 2;
    }
    char err[4096];
    /* the output files are checked before anything runs, written atomically, and removed
     * when the command fails (docs/cli.md) */
    static cli_outputs_t outputs;
    cli_outputs_init(&outputs, "validate");
    if ((csv && cli_outputs_add(&outputs, csv, "--csv")) ||
        (png && cli_outputs_add(&outputs, png, "--png"))) {
        cli_outputs_free(&outputs);
        return cli_exit(NCSIM_NOMEM);
    }
    cli_outputs_protect(&outputs, argv[optind]);
    if (cli_outputs_validate(&outputs)) {
        cli_outputs_free(&outputs);
        return cli_exit(NCSIM_IO);
    }
    sim_validate_manifest_t *m = NULL;
    ncsim_status_t st = sim_validate_load(argv[optind], &m, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim validate: %s\n", err);
        cli_outputs_abort(&outputs);
        cli_outputs_free(&outputs);
        return cli_exit(st);
    }
    sim_validate_options_t o = {arch, sets, nsets, NULL, 0, jobs, 0, only, nonly};
    sim_validate_result_t *res = calloc(m->nentries, sizeof *res);
    if (!res) {
        sim_validate_free(m);
        return cli_exit(NCSIM_NOMEM);
    }
    st = sim_validate_run(m, &o, res, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim validate: %s\n", err);
        free(res);
        sim_validate_free(m);
        cli_outputs_abort(&outputs);
        cli_outputs_free(&outputs);
        return cli_exit(st);
    }
    if (!quiet) {
        printf("%s", argv[optind]);
        if (m->name[0])
            printf(" (%s)", m->name);
        printf(": %zu entr%s%s%s\n", m->nentries, m->nentries == 1 ? "y" : "ies",
               arch ? ", all on " : "", arch ? arch : "");
    }
    sim_validate_summary_t s;
    sim_validate_summarise(m, res, &s);
    if (nonly && s.ran == 0) {
        fprintf(stderr, "ncsim validate: %s: no entry id contains '%s'%s\n", argv[optind],
                only[0], nonly > 1 ? " (or the other --only texts)" : "");
        free(res);
        sim_validate_free(m);
        cli_outputs_abort(&outputs);
        cli_outputs_free(&outputs);
        return 2;
    }
    sim_validate_print(stdout, m, res, quiet);
    fflush(stdout);
    int rc = 0;
    if (s.failed || s.outside || s.stale_known)
        rc = 1;
    /* an entry whose figure cannot be read from its run (no such instruction ran, no such
     * core) is a mistake in the manifest */
    for (size_t i = 0; i < m->nentries; i++)
        if (res[i].ran && (res[i].status == NCSIM_USAGE || res[i].status == NCSIM_ASSEMBLY))
            rc = 2;
    /* the table, CSV and plot are the result also when entries leave their band (exit 1) */
    int failed = 0;
    if (csv) {
        st = sim_validate_write_csv(cli_outputs_path(&outputs, csv), m, res, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim validate: %s\n", err);
            rc = cli_exit(st);
            failed = 1;
        } else {
            cli_outputs_mark_written(&outputs, csv);
        }
    }
    if (png) {
        st = sim_validate_plot(cli_outputs_path(&outputs, png), m, res, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim validate: %s\n", err);
            rc = cli_exit(st);
            failed = 1;
        } else {
            cli_outputs_mark_written(&outputs, png);
        }
    }
    if (failed) {
        cli_outputs_abort(&outputs);
    } else if (cli_outputs_commit(&outputs)) {
        rc = cli_exit(NCSIM_IO);
    }
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

int cli_fit(int argc, char **argv)
{
    enum { O_ARCH = 256, O_SET, O_KEY, O_MAX_EVALS, O_NAME };
    static const struct option opts[] = {{"arch", required_argument, 0, O_ARCH},
                                         {"set", required_argument, 0, O_SET},
                                         {"key", required_argument, 0, O_KEY},
                                         {"output", required_argument, 0, 'o'},
                                         {"name", required_argument, 0, O_NAME},
                                         {"max-evals", required_argument, 0, O_MAX_EVALS},
                                         {"jobs", required_argument, 0, 'j'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *sets[MAX_SETS];
    size_t nsets = 0;
    sim_fit_key_t keys[SIM_FIT_MAX_KEYS];
    static char keybuf[SIM_FIT_MAX_KEYS][128];
    size_t nkeys = 0;
    const char *arch = NULL, *output = NULL, *name = NULL;
    unsigned jobs = 1, max_evals = 0;
    int quiet = 0, c;
    char err[4096];
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:j:qh", opts, NULL)) != -1) {
        switch (c) {
        case O_ARCH: arch = optarg; break;
        case O_SET:
            if (nsets == MAX_SETS) {
                fputs("ncsim fit: too many --set options\n", stderr);
                return 2;
            }
            sets[nsets++] = optarg;
            break;
        case O_KEY:
            if (nkeys == SIM_FIT_MAX_KEYS) {
                fprintf(stderr, "ncsim fit: at most %d --key options\n", SIM_FIT_MAX_KEYS);
                return 2;
            }
            if (sim_fit_parse_key(optarg, keybuf[nkeys], sizeof keybuf[nkeys], &keys[nkeys], err,
                                  sizeof err) != NCSIM_OK) {
                fprintf(stderr, "ncsim fit: %s\n", err);
                return 2;
            }
            nkeys++;
            break;
        case 'o': output = optarg; break;
        case O_NAME: name = optarg; break;
        case O_MAX_EVALS: {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || errno || v < 2 || v > 1000000) {
                fprintf(stderr, "ncsim fit: --max-evals wants a number from 2 to 1000000, not "
                                "'%s'\n", optarg);
                return 2;
            }
            max_evals = (unsigned)v;
            break;
        }
        case 'j':
            if (parse_jobs("fit", optarg, &jobs))
                return 2;
            break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_fit, stdout); return 0;
        default: fputs(usage_fit, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "ncsim fit: expected one manifest file\n%s", usage_fit);
        return 2;
    }
    if (nkeys == 0) {
        fprintf(stderr, "ncsim fit: give at least one --key KEY=LO:HI\n%s", usage_fit);
        return 2;
    }
    const char *manifest = argv[optind];
    char outbuf[1024], namebuf[128];
    if (!output) {
        default_output(manifest, outbuf, sizeof outbuf);
        output = outbuf;
    }
    if (!name) {
        stem_of(output, namebuf, sizeof namebuf);
        name = namebuf;
    }
    static cli_outputs_t outputs;
    cli_outputs_init(&outputs, "fit");
    if (cli_outputs_add(&outputs, output, "--output")) {
        cli_outputs_free(&outputs);
        return cli_exit(NCSIM_NOMEM);
    }
    cli_outputs_protect(&outputs, manifest);
    if (arch)
        cli_outputs_protect(&outputs, arch);
    if (cli_outputs_validate(&outputs)) {
        cli_outputs_free(&outputs);
        return cli_exit(NCSIM_IO);
    }
    sim_validate_manifest_t *m = NULL;
    ncsim_status_t st = sim_validate_load(manifest, &m, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim fit: %s\n", err);
        cli_outputs_abort(&outputs);
        cli_outputs_free(&outputs);
        return cli_exit(st);
    }
    /* fitted keys apply after every entry's own "set": say so where that hides a choice */
    for (size_t i = 0; i < m->nentries; i++)
        for (size_t j = 0; j < m->entries[i].nsets; j++)
            for (size_t k = 0; k < nkeys; k++) {
                size_t kl = strlen(keys[k].key);
                if (m->entries[i].fit && strncmp(m->entries[i].sets[j], keys[k].key, kl) == 0 &&
                    m->entries[i].sets[j][kl] == '=')
                    fprintf(stderr, "ncsim fit: note: entry '%s' sets %s; the fit replaces it "
                                    "(fitted keys apply after the entries' own \"set\")\n",
                            m->entries[i].id, m->entries[i].sets[j]);
            }
    sim_fit_options_t fo;
    memset(&fo, 0, sizeof fo);
    fo.run.arch = arch;
    fo.run.sets = sets;
    fo.run.nsets = nsets;
    fo.run.jobs = jobs;
    fo.keys = keys;
    fo.nkeys = nkeys;
    fo.max_evals = max_evals;
    fo.progress = quiet ? NULL : stderr;
    sim_fit_outcome_t out;
    st = sim_fit_run(m, &fo, &out, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim fit: %s\n", err);
        sim_validate_free(m);
        cli_outputs_abort(&outputs);
        cli_outputs_free(&outputs);
        return cli_exit(st);
    }
    /* the tables before and after, over every entry */
    sim_validate_result_t *res = calloc(m->nentries, sizeof *res);
    char assign[SIM_FIT_MAX_KEYS][160];
    const char *extra[SIM_FIT_MAX_KEYS];
    int rc = 0;
    if (!res) {
        sim_validate_free(m);
        cli_outputs_abort(&outputs);
        cli_outputs_free(&outputs);
        return cli_exit(NCSIM_NOMEM);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < nkeys; k++) {
            sim_fit_assignment(keys[k].key, pass ? out.best[k] : out.start[k], assign[k],
                               sizeof assign[k]);
            extra[k] = assign[k];
        }
        sim_validate_options_t ro = fo.run;
        ro.extra_sets = extra;
        ro.nextra_sets = nkeys;
        st = sim_validate_run(m, &ro, res, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim fit: %s\n", err);
            rc = cli_exit(st);
            break;
        }
        printf("%s (%s):\n", pass ? "after the fit" : "before the fit",
               pass ? "fitted values" : "base values clamped to the bounds");
        sim_validate_print(stdout, m, res, 0);
        printf("fit cost (sum of weight x ln(sim/measured)^2 over fit entries): %.6g\n\n",
               pass ? out.cost_after : out.cost_before);
    }
    if (rc == 0) {
        printf("%-40s %14s %14s %14s %14s\n", "key", "start", "fitted", "low", "high");
        for (size_t k = 0; k < nkeys; k++)
            printf("%-40s %14.6g %14.6g %14.6g %14.6g%s\n", keys[k].key, out.start[k],
                   out.best[k], keys[k].lo, keys[k].hi,
                   (out.best[k] <= keys[k].lo + 1e-9 * (keys[k].hi - keys[k].lo) ||
                    out.best[k] >= keys[k].hi - 1e-9 * (keys[k].hi - keys[k].lo))
                       ? "  (at a bound)"
                       : "");
        printf("%u evaluations; %s\n", out.evals, out.stop);
        printf("the same as overrides:");
        for (size_t k = 0; k < nkeys; k++)
            printf(" --set %s", assign[k]);
        putchar('\n');
        char *json = sim_fit_config_json(m, &fo, &out, name);
        if (!json) {
            rc = cli_exit(NCSIM_NOMEM);
        } else if (ncsim_write_file(cli_outputs_path(&outputs, output), json, strlen(json))) {
            fprintf(stderr, "ncsim fit: cannot write %s: %s\n", output, strerror(errno));
            rc = cli_exit(NCSIM_IO);
        } else {
            cli_outputs_mark_written(&outputs, output);
        }
        free(json);
    }
    if (rc == 0 && cli_outputs_commit(&outputs) == 0) {
        printf("wrote %s (use it with --arch %s)\n", output, output);
    } else {
        if (rc == 0)
            rc = cli_exit(NCSIM_IO);
        cli_outputs_abort(&outputs);
    }
    cli_outputs_free(&outputs);
    free(res);
    sim_validate_free(m);
    return rc;
}
