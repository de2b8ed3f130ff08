/*
 * cmd_check.c -- `ncsim check PROG [options]` (CLI.md): the static checks, then a functional
 * run with every optional check on (sim/checker.h, docs/check.md). Findings go to stdout,
 * as text or JSON; the exit code is 1 when there is any finding or the run fails. A client
 * of the public API (include/ncsim.h), like `ncsim run`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"

#define MAX_ARGS 256

typedef struct bind {
    const char *name, *path;
    size_t name_len;
} bind_t;

/* ---- options: one row each (cli/options.h) -------------------------------------------------- */

typedef struct check_args {
    const char *path, *arch_name;
    const char *sets[MAX_ARGS];
    bind_t ins[MAX_ARGS];
    int nsets, nins, json, quiet, stochastic;
    uint64_t seed, random_seed;
    unsigned checks;
    size_t max_groups;
} check_args_t;

static int opt_arch(void *p, const char *name, const char *arg)
{
    (void)name;
    ((check_args_t *)p)->arch_name = arg;
    return 0;
}

static int opt_set(void *p, const char *name, const char *arg)
{
    check_args_t *a = p;
    (void)name;
    if (a->nsets == MAX_ARGS) {
        fputs("ncsim check: too many --set options\n", stderr);
        return -1;
    }
    a->sets[a->nsets++] = arg;
    return 0;
}

static int opt_in(void *p, const char *name, const char *arg)
{
    check_args_t *a = p;
    (void)name;
    const char *eq = strchr(arg, '=');
    if (a->nins == MAX_ARGS || !eq || eq == arg || !eq[1]) {
        fprintf(stderr, "ncsim check: --in wants NAME=FILE.npy, not '%s'\n", arg);
        return -1;
    }
    a->ins[a->nins++] = (bind_t){arg, eq + 1, (size_t)(eq - arg)};
    return 0;
}

/* --random-inputs, --seed, --max: an integer (decimal, 0x hex or 0 octal, as strtoull) */
static int opt_integer(void *p, const char *name, const char *arg)
{
    check_args_t *a = p;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 0);
    if (errno || *end || !*arg) {
        fprintf(stderr, "ncsim check: --%s wants an integer, not '%s'\n", name, arg);
        return -1;
    }
    if (strcmp(name, "random-inputs") == 0)
        a->random_seed = v;
    else if (strcmp(name, "seed") == 0)
        a->seed = v;
    else
        a->max_groups = (size_t)v;
    return 0;
}

static int opt_checks(void *p, const char *name, const char *arg)
{
    (void)name;
    if (ncsim_parse_checks(arg, &((check_args_t *)p)->checks) != NCSIM_OK) {
        fprintf(stderr, "ncsim check: --checks: %s\n", ncsim_last_error());
        return -1;
    }
    return 0;
}

static int opt_flag(void *p, const char *name, const char *arg)
{
    check_args_t *a = p;
    (void)arg;
    *(strcmp(name, "json") == 0                  ? &a->json
      : strcmp(name, "stochastic-rounding") == 0 ? &a->stochastic
                                                 : &a->quiet) = 1;
    return 0;
}

static const cli_option_t check_options[] = {
    {"arch", 0, "NAME|FILE.json", opt_arch,
     "architecture preset or config file (default: the program's\n"
     ".arch, else trn1)"},
    {"set", 0, "KEY=VALUE", opt_set, "override one config value (repeatable)"},
    {"in", 0, "NAME=FILE.npy", opt_in, "bind an input/inout HBM tensor (repeatable)"},
    {"random-inputs", 0, "SEED", opt_integer,
     "fill unbound inputs with seeded uniform values in [-1, 1)\n"
     "(default: unbound inputs get random values with seed 0)"},
    {"seed", 0, "N", opt_integer, "seed for stochastic rounding and dropout (default 0)"},
    {"stochastic-rounding", 0, NULL, opt_flag, "round by the seeded stochastic rule"},
    {"checks", 0, "LIST", opt_checks,
     "only these: races,uninit,nan,psum,sems,views (default all)"},
    {"json", 0, NULL, opt_flag, "findings as JSON on stdout"},
    {"max", 0, "N", opt_integer, "print at most N groups of findings (default 50, 0: all)"},
    {"quiet", 'q', NULL, opt_flag, "no summary line"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t check_command = {
    "check",
    "usage: ncsim check PROG [options]\n"
    "\n"
    "Check a program (.nca or .ncx): static checks of its semaphores, then a functional run\n"
    "with every optional check on. Reports data races between engines, DMA queues and\n"
    "collectives that no semaphore chain orders (whether or not they collided in this run),\n"
    "reads of memory nothing wrote, the first instruction producing NaN or Inf, PSUM\n"
    "accumulation misuse, reads of PSUM while its accumulation group is open, waits that can\n"
    "never hold, posts no wait observes and semaphore overflow (docs/check.md).\n",
    check_options,
    28,
    "exit codes: 0 no finding, 1 findings or a run-time error or deadlock, 2 usage or\n"
    "assembly error, 3 input/output error, 4 internal error.\n",
    1,
    1,
    "expected one program",
};

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

/* Every --in bound, then random values for the other inputs. 0 or the exit code. */
static int bind_inputs(const check_args_t *a, const ncsim_program_t *prog, ncsim_sim_t *s)
{
    for (int i = 0; i < a->nins; i++) {
        const bind_t *b = &a->ins[i];
        ncsim_tensor_info_t info;
        int t = cli_find_hbm_tensor(prog, b->name, b->name_len, &info);
        if (t < 0 || (info.role != NCSIM_INPUT && info.role != NCSIM_INOUT)) {
            fprintf(stderr, "ncsim check: --in %.*s: the program declares no input or inout "
                            "HBM tensor of that name\n",
                    (int)b->name_len, b->name);
            return 2;
        }
        ncsim_status_t st = ncsim_sim_load_npy(s, (uint32_t)t, b->path);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim check: %s\n", ncsim_last_error());
            return cli_exit(st);
        }
    }
    ncsim_status_t st = ncsim_sim_random_inputs(s, a->random_seed);
    if (st != NCSIM_OK)
        fprintf(stderr, "ncsim check: %s\n", ncsim_last_error());
    return st == NCSIM_OK ? 0 : cli_exit(st);
}

int cli_check(int argc, char **argv)
{
    static check_args_t a;
    memset(&a, 0, sizeof a);
    a.checks = NCSIM_CHECK_ALL;
    a.max_groups = 50;
    int first;
    int rc = cli_parse(&check_command, argc, argv, &a, &first);
    if (rc >= 0)
        return rc;
    a.path = argv[first];
    ncsim_program_t *prog = NULL;
    ncsim_arch_t *arch = NULL;
    rc = cli_load("check", a.path, a.arch_name, a.sets, a.nsets, &prog, &arch);
    if (rc)
        return rc;
    ncsim_sim_t *s = NULL;
    ncsim_options_t so;
    ncsim_options_init(&so);
    so.seed = a.seed;
    so.stochastic_rounding = a.stochastic;
    so.checks = a.checks;
    so.program_name = a.path;
    ncsim_status_t st = ncsim_sim_create(prog, arch, &so, &s);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim check: %s\n", ncsim_last_error());
        rc = cli_exit(st);
    } else if (!(rc = bind_inputs(&a, prog, s))) {
        rc = report_findings(s, ncsim_sim_run(s), a.path, a.json, a.quiet, a.max_groups);
    }
    ncsim_sim_free(s);
    ncsim_program_free(prog);
    ncsim_arch_free(arch);
    return rc;
}
