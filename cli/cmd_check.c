/*
 * cmd_check.c -- `ncsim check PROG [options]` (CLI.md): the static checks, then a functional
 * run with every optional check on (sim/checker.h, docs/check.md). Findings go to stdout,
 * as text or JSON; the exit code is 1 when there is any finding or the run fails.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "checker.h"
#include "cli.h"
#include "load.h"
#include "npy.h"
#include "rng.h"
#include "sim.h"

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

static ncsim_status_t load_input(sim_t *s, uint32_t t, const char *path, char *err,
                                 size_t errlen)
{
    mdl_npy_t a;
    ncsim_status_t st = mdl_npy_read(path, &a, err, errlen);
    if (st != NCSIM_OK)
        return st == NCSIM_NOMEM ? st : NCSIM_IO;
    st = sim_tensor_write_npy(s, t, &a, path, err, errlen);
    mdl_npy_free(&a);
    return st;
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
    unsigned checks = CHK_ALL;
    size_t max_groups = 50;
    char err[4096];
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
            if (chk_parse_list(optarg, &checks, err, sizeof err)) {
                fprintf(stderr, "ncsim check: --checks: %s\n", err);
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
    isa_geometry_t g;
    int grc = cli_geometry(arch_name, &g, err, sizeof err);
    if (grc) {
        fprintf(stderr, "ncsim check: %s\n", err);
        return grc;
    }
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    isa_program_t *prog = NULL;
    ncsim_status_t st = sim_load_program(path, &g, arch_name ? NULL : cli_arch_lookup, NULL,
                                         &prog, &diag);
    cli_print_diag(&diag);
    isa_diag_free(&diag);
    if (st != NCSIM_OK)
        return cli_exit(st);
    int rc = 0;
    sim_t *s = NULL;
    chk_t *k = NULL;
    uint8_t *bound = NULL;
    mdl_arch_t arch;
    st = mdl_arch_load(arch_name ? arch_name : (prog->arch[0] ? prog->arch : "trn1"), &arch,
                       err, sizeof err);
    for (int i = 0; st == NCSIM_OK && i < nsets; i++)
        st = mdl_arch_set(&arch, sets[i], err, sizeof err);
    if (st == NCSIM_OK)
        st = mdl_arch_validate(&arch, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim check: %s\n", err);
        rc = cli_exit(st == NCSIM_IO ? NCSIM_IO : NCSIM_USAGE);
        goto out;
    }
    bound = calloc(prog->ntensors + 1, 1);
    if (!bound || chk_create(prog, &arch, checks, &k) != NCSIM_OK) {
        rc = cli_exit(NCSIM_NOMEM);
        goto out;
    }
    chk_static(k);
    sim_options_t so;
    memset(&so, 0, sizeof so);
    so.arch = &arch;
    so.seed = seed;
    so.stochastic_rounding = stochastic;
    so.observer = chk_observer(k);
    st = sim_create(prog, &so, &s, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim check: %s\n", err);
        rc = cli_exit(st);
        goto out;
    }
    for (int i = 0; i < nins; i++) {
        int t = sim_find_hbm_tensor(prog, ins[i].name, ins[i].name_len);
        int kind = t >= 0 ? prog->tensors[t].kind : -1;
        if (t < 0 || (kind != ISA_TK_INPUT && kind != ISA_TK_INOUT)) {
            fprintf(stderr, "ncsim check: --in %.*s: the program declares no input or inout "
                            "HBM tensor of that name\n",
                    (int)ins[i].name_len, ins[i].name);
            rc = 2;
            goto out;
        }
        st = load_input(s, (uint32_t)t, ins[i].path, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim check: %s\n", err);
            rc = cli_exit(st);
            goto out;
        }
        bound[t] = 1;
    }
    for (uint32_t t = 0; t < prog->ntensors; t++) {
        const isa_tensor_t *T = &prog->tensors[t];
        if (T->space == ISA_SPACE_HBM && !bound[t] &&
            (T->kind == ISA_TK_INPUT || T->kind == ISA_TK_INOUT)) {
            st = sim_tensor_fill_random(s, t, random_seed);
            if (st != NCSIM_OK) {
                rc = cli_exit(st);
                goto out;
            }
        }
    }
    ncsim_status_t run = sim_run(s, SIM_RUN_UNTIL_IDLE, 0);
    const char *run_error = run == NCSIM_OK ? "" : sim_error(s);
    size_t n = chk_count(k);
    if (json) {
        char *text = chk_json(k);
        if (!text) {
            rc = cli_exit(NCSIM_NOMEM);
            goto out;
        }
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
        free(text);
    } else {
        chk_print(k, stdout, max_groups);
        if (run != NCSIM_OK)
            fputs(run_error, stderr);
        if (!quiet) {
            if (n || run != NCSIM_OK)
                fprintf(stderr, "ncsim check: %s: %zu finding%s%s\n", path, n,
                        n == 1 ? "" : "s",
                        run != NCSIM_OK ? ", and the run failed" : "");
            else
                fprintf(stderr, "ncsim check: %s: clean\n", path);
        }
    }
    if (run == NCSIM_NOMEM || chk_failed(k))
        rc = cli_exit(NCSIM_NOMEM);
    else if (n || run != NCSIM_OK)
        rc = 1;
out:
    sim_destroy(s);
    chk_destroy(k);
    free(bound);
    isa_program_free(prog);
    return rc;
}
