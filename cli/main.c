/*
 * main.c -- the ncsim command line (shared/spec/CLI.md).
 *
 * Each subcommand parses its own options with getopt_long and returns a status that maps to
 * the documented exit code. Data goes to stdout, diagnostics to stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "cli.h"
#include "dis.h"
#include "load.h"
#include "ncx.h"
#include "outputs.h"
#include "sweep.h"
#include "ncsim.h"
#ifdef NCSIM_HAVE_VIZ
#include "viz.h"
#endif

static const char usage_main[] =
    "usage: ncsim COMMAND [options]\n"
    "\n"
    "Simulate NeuronCore-v2 (Trainium / Inferentia2) programs written in NCA assembly.\n"
    "\n"
    "commands:\n"
    "  asm PROG.nca -o PROG.ncx      assemble\n"
    "  dis PROG.ncx [-o OUT.nca]     disassemble to text that assembles back identically\n"
    "  run PROG [options]            simulate a program (.nca or .ncx)\n"
    "  check PROG [options]          static checks plus a run with every optional check on\n"
    "  report STATS.json|TRACE       summarise a run: verdict, engines, critical path;\n"
    "                                --by-line: where the time went per source line\n"
    "  diff A B                      compare two runs (statistics files or traces)\n"
    "  viz TRACE [B] [--png OUT.png] trace viewer (two traces: compared on one time axis)\n"
    "  sweep SPEC.json [options]     architecture sweep\n"
    "  validate MANIFEST.json        compare simulated figures with measured ones\n"
    "  fit MANIFEST.json --key K=LO:HI  fit config keys to a manifest's measurements\n"
    "  arch [NAME]                   list presets, or print one resolved config as JSON\n"
    "\n"
    "`ncsim COMMAND --help` describes a command's options.\n"
    "exit codes: 0 success, 1 program error, 2 usage or assembly error, 3 I/O error,\n"
    "4 internal error.\n";

static const char usage_asm[] =
    "usage: ncsim asm PROG.nca -o PROG.ncx [--arch NAME|FILE.json]\n"
    "\n"
    "Assemble NCA text into the .ncx binary format (isa/FORMAT.md). The same input always\n"
    "gives the same bytes. Errors are printed as FILE:LINE:COL: error: MESSAGE (exit 2).\n"
    "  -o, --output FILE   where to write the binary ('-' for stdout)\n"
    "  --arch NAME|FILE    architecture whose memory sizes to check against (default: the\n"
    "                      program's .arch, else trn1)\n";

static const char usage_dis[] =
    "usage: ncsim dis PROG.ncx [-o OUT.nca] [--arch NAME|FILE.json]\n"
    "\n"
    "Disassemble a binary (or re-print an assembled text program) as NCA text that\n"
    "assembles back to the identical binary.\n"
    "  -o, --output FILE   where to write the text (default stdout)\n";

static const char usage_arch[] =
    "usage: ncsim arch [NAME|FILE.json] [--set KEY=VALUE ...]\n"
    "\n"
    "Without NAME, list the built-in presets. With NAME (a preset or a config file), print\n"
    "its full resolved configuration as JSON, after any --set overrides.\n";

int cli_print_diag(const isa_diag_t *d)
{
    if (d->text)
        fputs(d->text, stderr);
    return 0;
}

/* `.arch NAME` in a program: geometry of that preset. */
int cli_arch_lookup(void *ctx, const char *name, isa_geometry_t *g)
{
    (void)ctx;
    mdl_arch_t a;
    char err[256];
    if (mdl_arch_load(name, &a, err, sizeof err) != NCSIM_OK)
        return -1;
    mdl_arch_geometry(&a, g);
    return 0;
}

int cli_exit(ncsim_status_t st)
{
    return ncsim_status_exit_code(st);
}

/* Geometry for assembling: --arch when given, else trn1. The program's own .arch, if any,
 * replaces it through cli_arch_lookup. Returns 0, or the exit code (2 for an unknown
 * name or a bad config, 3 for a file that cannot be read). */
int cli_geometry(const char *arch_name, isa_geometry_t *g, char *err, size_t errlen)
{
    mdl_arch_t a;
    ncsim_status_t st = mdl_arch_load(arch_name ? arch_name : "trn1", &a, err, errlen);
    if (st != NCSIM_OK)
        return cli_exit(st == NCSIM_IO || st == NCSIM_NOMEM ? st : NCSIM_USAGE);
    mdl_arch_geometry(&a, g);
    return 0;
}

/* PROG assembled or loaded for geometry --arch (else trn1, or the program's own .arch), its
 * diagnostics printed. Returns 0, or the exit code after printing why. */
int cli_load_program(const char *cmd, const char *path, const char *arch_name,
                     isa_program_t **prog)
{
    char err[512];
    isa_geometry_t g;
    *prog = NULL;
    int rc = cli_geometry(arch_name, &g, err, sizeof err);
    if (rc) {
        fprintf(stderr, "ncsim %s: %s\n", cmd, err);
        return rc;
    }
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    ncsim_status_t st = sim_load_program(path, &g, arch_name ? NULL : cli_arch_lookup, NULL,
                                         prog, &diag);
    cli_print_diag(&diag);
    isa_diag_free(&diag);
    return st == NCSIM_OK ? 0 : cli_exit(st);
}

int cli_load(const char *cmd, const char *path, const char *arch_name, const char *const *sets,
             int nsets, ncsim_program_t **prog, ncsim_arch_t **arch)
{
    *prog = NULL;
    *arch = NULL;
    ncsim_arch_t *given = NULL;
    ncsim_status_t st = arch_name ? ncsim_arch_load(arch_name, &given) : NCSIM_OK;
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim %s: %s\n", cmd, ncsim_last_error());
        return cli_exit(st == NCSIM_IO || st == NCSIM_NOMEM ? st : NCSIM_USAGE);
    }
    st = ncsim_program_load_file(path, given, prog);
    if (st != NCSIM_OK) {
        fprintf(stderr, "%s\n", ncsim_last_error()); /* every diagnostic, FILE:LINE:COL: ... */
        ncsim_arch_free(given);
        return cli_exit(st);
    }
    /* --arch, else the program's .arch, else trn1; then the --set overrides */
    if (given)
        *arch = given;
    else
        st = ncsim_arch_load(ncsim_program_arch(*prog)[0] ? ncsim_program_arch(*prog) : "trn1",
                             arch);
    for (int i = 0; st == NCSIM_OK && i < nsets; i++)
        st = ncsim_arch_set(*arch, sets[i]);
    if (st == NCSIM_OK)
        st = ncsim_arch_validate(*arch);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim %s: %s\n", cmd, ncsim_last_error());
        ncsim_program_free(*prog);
        ncsim_arch_free(*arch);
        *prog = NULL;
        *arch = NULL;
        return cli_exit(st == NCSIM_IO ? NCSIM_IO : NCSIM_USAGE);
    }
    return 0;
}

int cli_find_hbm_tensor(const ncsim_program_t *prog, const char *name, size_t len,
                        ncsim_tensor_info_t *info)
{
    for (uint32_t i = 0; i < ncsim_program_tensor_count(prog); i++) {
        if (ncsim_program_tensor(prog, i, info) != NCSIM_OK)
            break;
        if (info->memory == NCSIM_HBM && strlen(info->name) == len &&
            memcmp(info->name, name, len) == 0)
            return (int)i;
    }
    return -1;
}

static int cmd_asm(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"arch", required_argument, 0, 'a'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL, *arch = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'a': arch = optarg; break;
        case 'h': fputs(usage_asm, stdout); return 0;
        default: fputs(usage_asm, stderr); return 2;
        }
    }
    if (optind != argc - 1 || !out) {
        fprintf(stderr, "ncsim asm: %s\n%s",
                optind != argc - 1 ? "expected one input file" : "missing -o OUTPUT", usage_asm);
        return 2;
    }
    static cli_outputs_t outputs;
    int rc = cli_output_begin(&outputs, "asm", out, argv[optind], arch);
    if (rc)
        return rc;
    isa_program_t *prog = NULL;
    rc = cli_load_program("asm", argv[optind], arch, &prog);
    if (rc)
        return cli_output_end(&outputs, rc);
    uint8_t *buf = NULL;
    size_t len = 0;
    ncsim_status_t st = isa_ncx_write(prog, &buf, &len);
    isa_program_free(prog);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim asm: cannot encode: %s\n", ncsim_status_text(st));
        return cli_output_end(&outputs, cli_exit(st));
    }
    rc = cli_output_write(&outputs, out, buf, len);
    free(buf);
    return cli_output_end(&outputs, rc);
}

static int cmd_dis(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"arch", required_argument, 0, 'a'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = "-", *arch = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'a': arch = optarg; break;
        case 'h': fputs(usage_dis, stdout); return 0;
        default: fputs(usage_dis, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "ncsim dis: expected one input file\n%s", usage_dis);
        return 2;
    }
    static cli_outputs_t outputs;
    int rc = cli_output_begin(&outputs, "dis", out, argv[optind], arch);
    if (rc)
        return rc;
    isa_program_t *prog = NULL;
    rc = cli_load_program("dis", argv[optind], arch, &prog);
    if (rc)
        return cli_output_end(&outputs, rc);
    char *text = isa_disassemble(prog);
    isa_program_free(prog);
    if (!text) {
        fputs("ncsim dis: out of memory\n", stderr);
        return cli_output_end(&outputs, cli_exit(NCSIM_NOMEM));
    }
    rc = cli_output_write(&outputs, out, text, strlen(text));
    free(text);
    return cli_output_end(&outputs, rc);
}

static int cmd_arch(int argc, char **argv)
{
    static const struct option opts[] = {{"set", required_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *sets[256];
    int nsets = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (nsets == 256) {
                fputs("ncsim arch: too many --set options\n", stderr);
                return 2;
            }
            sets[nsets++] = optarg;
            break;
        case 'h': fputs(usage_arch, stdout); return 0;
        default: fputs(usage_arch, stderr); return 2;
        }
    }
    if (optind == argc) {
        const char *const *names = mdl_arch_preset_names();
        for (int i = 0; names[i]; i++) {
            mdl_arch_t a;
            char err[512];
            if (mdl_arch_load(names[i], &a, err, sizeof err) == NCSIM_OK)
                printf("%-14s %s\n", names[i], a.description);
            else
                printf("%-14s (cannot load: %s)\n", names[i], err);
        }
        return 0;
    }
    if (optind != argc - 1) {
        fputs(usage_arch, stderr);
        return 2;
    }
    mdl_arch_t a;
    char err[512];
    ncsim_status_t st = mdl_arch_load(argv[optind], &a, err, sizeof err);
    for (int i = 0; st == NCSIM_OK && i < nsets; i++)
        st = mdl_arch_set(&a, sets[i], err, sizeof err);
    if (st == NCSIM_OK)
        st = mdl_arch_validate(&a, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim arch: %s\n", err);
        return cli_exit(st);
    }
    char *json = mdl_arch_to_json(&a);
    if (!json)
        return cli_exit(NCSIM_NOMEM);
    fputs(json, stdout);
    free(json);
    return 0;
}

int main(int argc, char **argv)
{
    cli_escape_stderr();
    if (argc < 2) {
        fputs(usage_main, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("ncsim %s\n", ncsim_version());
        return 0;
    }
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    if (strcmp(cmd, "asm") == 0)
        return cmd_asm(sub_argc, sub_argv);
    if (strcmp(cmd, "dis") == 0)
        return cmd_dis(sub_argc, sub_argv);
    if (strcmp(cmd, "arch") == 0)
        return cmd_arch(sub_argc, sub_argv);
    if (strcmp(cmd, "run") == 0)
        return cli_run(sub_argc, sub_argv);
    if (strcmp(cmd, "report") == 0)
        return cli_report(sub_argc, sub_argv);
    if (strcmp(cmd, "diff") == 0)
        return cli_diff(sub_argc, sub_argv);
    if (strcmp(cmd, "check") == 0)
        return cli_check(sub_argc, sub_argv);
    if (strcmp(cmd, "viz") == 0) {
#ifdef NCSIM_HAVE_VIZ
        return viz_main(sub_argc, sub_argv);
#else
        fputs("ncsim viz: this ncsim was built without the viewer (it needs SDL2: install "
              "libsdl2-dev and rebuild with -DNCSIM_BUILD_VIZ=ON)\n", stderr);
        return 2;
#endif
    }
    if (strcmp(cmd, "sweep") == 0)
        return cli_sweep(sub_argc, sub_argv);
    if (strcmp(cmd, "validate") == 0)
        return cli_validate(sub_argc, sub_argv);
    if (strcmp(cmd, "fit") == 0)
        return cli_fit(sub_argc, sub_argv);
    fprintf(stderr, "ncsim: unknown command '%s'\n\n%s", cmd, usage_main);
    return 2;
}
