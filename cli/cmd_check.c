/*
 * cmd_check.c -- `ncsim check PROG [options]` (CLI.md): the static checks, then a functional
 * run with every optional check on (sim/checker.h, docs/check.md). Findings go to stdout,
 * as text or JSON; the exit code is 1 when there is any finding or the run fails. A client
 * of the public API (include/ncsim.h), like `ncsim run`.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_check[] =
    "usage: ncsim check PROG [options]\n"
    "\n"
    "Check a program (.nca or .ncx): static checks of its semaphores, then a functional run\n"
    "with every optional check on. Reports data races between engines, DMA queues and\n"
    "collectives that no semaphore chain orders (whether or not they collided in this run),\n"
    "reads of memory nothing wrote, the first instruction producing NaN or Inf, PSUM\n"
    "accumulation misuse, reads of PSUM while its accumulation group is open, waits that can\n"
    "never hold, posts no wait observes and semaphore overflow (docs/check.md).\n"
    "  --arch NAME|FILE.json     architecture preset or config file (default: the program's\n"
    "                            .arch, else trn1)\n"
    "  --set KEY=VALUE           override one config value (repeatable)\n"
    "  --in NAME=FILE.npy        bind an input/inout HBM tensor (repeatable)\n"
    "  --random-inputs SEED      fill unbound inputs with seeded uniform values in [-1, 1)\n"
    "                            (default: unbound inputs get random values with seed 0)\n"
    "  --seed N                  seed for stochastic rounding and dropout (default 0)\n"
    "  --stochastic-rounding     round by the seeded stochastic rule\n"
    "  --checks LIST             only these: races,uninit,nan,psum,sems,views (default all)\n"
    "  --json                    findings as JSON on stdout\n"
    "  --max N                   print at most N groups of findings (default 50, 0: all)\n"
    "  -q, --quiet               no summary line\n"
    "exit codes: 0 no finding, 1 findings or a run-time error or deadlock, 2 usage or\n"
    "assembly error, 3 input/output error, 4 internal error.\n";

#define MAX_ARGS 256

typedef struct bind {
    const char *name, *path;
    size_t name_len;
} bind_t;

/* The findings (and the run's outcome) as text or JSON; the exit code: 1 for any finding
 * or a failed run, 4 when the checker ran out of memory, else 0. */
static int report_findings(ncsim_sim_t *s, ncsim_status_t run, const char *path, int json,
                           int quiet, size_t max_groups)
{
    const char *run_error = run == NCSIM_OK ? ""
                            : run == NCSIM_PROGRAM ? ncsim_sim_error(s)
                                                   : ncsim_last_error();
    size_t n = ncsim_sim_finding_count(s);
    if (json) {
        char *text = NULL;
        if (ncsim_sim_findings_json(s, &text) != NCSIM_OK)
            return cli_exit(NCSIM_NOMEM);
        /* add the run's outcome to the checker's document: {"run": ..., <findings>} */
        printf("{\n  \"run\": \"%s\",\n  \"run_error\": ", run == NCSIM_OK ? "ok" : "error");
        putchar('"');
        for (const char *p = run_error; *p; p++) {
            if (*p == '"' || *p == '\\')
                printf("\\%c", *p);
            else if (*p == '\n')
                fputs("\\n", stdout);
            else if ((unsigned char)*p < 0x20)
                printf("\\u%04x", (unsigned char)*p);
            else
                putchar(*p);
        }
        printf("\",\n%s\n", text + 2); /* the checker's object without its opening brace */
        ncsim_free(text);
    } else {
        ncsim_sim_findings_print(s, stdout, max_groups);
        if (run != NCSIM_OK)
            fprintf(stderr, run == NCSIM_PROGRAM ? "%s" : "%s\n", run_error);
        if (!quiet) {
            if (n || run != NCSIM_OK)
                fprintf(stderr, "ncsim check: %s: %zu finding%s%s\n", path, n,
                        n == 1 ? "" : "s",
                        run != NCSIM_OK ? ", and the run failed" : "");
            else
                fprintf(stderr, "ncsim check: %s: clean\n", path);
        }
    }
    if (run == NCSIM_NOMEM)
        return cli_exit(NCSIM_NOMEM);
    return n || run != NCSIM_OK ? 1 : 0;
}

int cli_check(int argc, char **argv)
{
    enum { O_ARCH = 256, O_SET, O_IN, O_RANDOM, O_SEED, O_SR, O_CHECKS, O_JSON, O_MAX };
    static const struct option opts[] = {{"arch", required_argument, 0, O_ARCH},
                                         {"set", required_argument, 0, O_SET},
                                         {"in", required_argument, 0, O_IN},
                                         {"random-inputs", required_argument, 0, O_RANDOM},
                                         {"seed", required_argument, 0, O_SEED},
                                         {"stochastic-rounding", no_argument, 0, O_SR},
                                         {"checks", required_argument, 0, O_CHECKS},
                                         {"json", no_argument, 0, O_JSON},
                                         {"max", required_argument, 0, O_MAX},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *arch_name = NULL;
    const char *sets[MAX_ARGS];
    bind_t ins[MAX_ARGS];
    int nsets = 0, nins = 0, json = 0, quiet = 0, stochastic = 0;
    uint64_t seed = 0, random_seed = 0;
    unsigned checks = NCSIM_CHECK_ALL;
    size_t max_groups = 50;
    char *end;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case O_ARCH: arch_name = optarg; break;
        case O_SET:
            if (nsets == MAX_ARGS) {
                fputs("ncsim check: too many --set options\n", stderr);
                return 2;
            }
            sets[nsets++] = optarg;
            break;
        case O_IN: {
            const char *eq = strchr(optarg, '=');
            if (nins == MAX_ARGS || !eq || eq == optarg || !eq[1]) {
                fprintf(stderr, "ncsim check: --in wants NAME=FILE.npy, not '%s'\n", optarg);
                return 2;
            }
            ins[nins++] = (bind_t){optarg, eq + 1, (size_t)(eq - optarg)};
            break;
        }
        case O_RANDOM:
        case O_SEED:
        case O_MAX: {
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 0);
            if (errno || *end || !*optarg) {
                fprintf(stderr, "ncsim check: --%s wants an integer, not '%s'\n",
                        c == O_RANDOM ? "random-inputs" : c == O_SEED ? "seed" : "max",
                        optarg);
                return 2;
            }
            if (c == O_RANDOM)
                random_seed = v;
            else if (c == O_SEED)
                seed = v;
            else
                max_groups = (size_t)v;
            break;
        }
        case O_SR: stochastic = 1; break;
        case O_CHECKS:
            if (ncsim_parse_checks(optarg, &checks) != NCSIM_OK) {
                fprintf(stderr, "ncsim check: --checks: %s\n", ncsim_last_error());
                return 2;
            }
            break;
        case O_JSON: json = 1; break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_check, stdout); return 0;
        default: fputs(usage_check, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "ncsim check: expected one program\n%s", usage_check);
        return 2;
    }
    const char *path = argv[optind];
    ncsim_program_t *prog = NULL;
    ncsim_arch_t *arch = NULL;
    int rc = cli_load("check", path, arch_name, sets, nsets, &prog, &arch);
    if (rc)
        return rc;
    ncsim_sim_t *s = NULL;
    ncsim_options_t so;
    ncsim_options_init(&so);
    so.seed = seed;
    so.stochastic_rounding = stochastic;
    so.checks = checks;
    so.program_name = path;
    ncsim_status_t st = ncsim_sim_create(prog, arch, &so, &s);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim check: %s\n", ncsim_last_error());
        rc = cli_exit(st);
        goto out;
    }
    for (int i = 0; i < nins; i++) {
        ncsim_tensor_info_t info;
        int t = cli_find_hbm_tensor(prog, ins[i].name, ins[i].name_len, &info);
        if (t < 0 || (info.role != NCSIM_INPUT && info.role != NCSIM_INOUT)) {
            fprintf(stderr, "ncsim check: --in %.*s: the program declares no input or inout "
                            "HBM tensor of that name\n",
                    (int)ins[i].name_len, ins[i].name);
            rc = 2;
            goto out;
        }
        st = ncsim_sim_load_npy(s, (uint32_t)t, ins[i].path);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim check: %s\n", ncsim_last_error());
            rc = cli_exit(st);
            goto out;
        }
    }
    st = ncsim_sim_random_inputs(s, random_seed);
    if (st != NCSIM_OK) {
        rc = cli_exit(st);
        goto out;
    }
    rc = report_findings(s, ncsim_sim_run(s), path, json, quiet, max_groups);
out:
    ncsim_sim_free(s);
    ncsim_program_free(prog);
    ncsim_arch_free(arch);
    return rc;
}
