/*
 * main.c -- the ncsim command line (shared/spec/CLI.md).
 *
 * Each subcommand declares its options as a table (cli/options.h) and returns a status that
 * maps to the documented exit code. Data goes to stdout, diagnostics to stderr.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "outputs.h"
#include "sweep.h"
#include "ncsim.h"

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


int cli_exit(ncsim_status_t st)
{
    return ncsim_status_exit_code(st);
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

/* ---- asm, dis, arch: options as tables (cli/options.h), work through ncsim.h ------------------ */

typedef struct prog_args {
    const char *out, *arch;
    const char *sets[256];
    int nsets;
} prog_args_t;

static int opt_text(void *p, const char *name, const char *arg)
{
    prog_args_t *a = p;
    *(strcmp(name, "output") == 0 ? &a->out : &a->arch) = arg;
    return 0;
}

static int opt_set(void *p, const char *name, const char *arg)
{
    prog_args_t *a = p;
    (void)name;
    if (a->nsets == 256) {
        fputs("ncsim arch: too many --set options\n", stderr);
        return -1;
    }
    a->sets[a->nsets++] = arg;
    return 0;
}

static const cli_option_t asm_options[] = {
    {"output", 'o', "FILE", opt_text, "where to write the binary ('-' for stdout)"},
    {"arch", 0, "NAME|FILE", opt_text,
     "architecture whose memory sizes to check against (default: the\n"
     "program's .arch, else trn1)"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t asm_command = {
    "asm",
    "usage: ncsim asm PROG.nca -o PROG.ncx [--arch NAME|FILE.json]\n"
    "\n"
    "Assemble NCA text into the .ncx binary format (isa/FORMAT.md). The same input always\n"
    "gives the same bytes. Errors are printed as FILE:LINE:COL: error: MESSAGE (exit 2).\n",
    asm_options,
    22,
    NULL,
    1,
    1,
    "expected one input file",
};

static const cli_option_t dis_options[] = {
    {"output", 'o', "FILE", opt_text, "where to write the text (default stdout)"},
    {"arch", 0, "NAME|FILE", opt_text,
     "architecture whose memory sizes to check against (default: the\n"
     "program's .arch, else trn1)"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t dis_command = {
    "dis",
    "usage: ncsim dis PROG.ncx [-o OUT.nca] [--arch NAME|FILE.json]\n"
    "\n"
    "Disassemble a binary (or re-print an assembled text program) as NCA text that\n"
    "assembles back to the identical binary.\n",
    dis_options,
    22,
    NULL,
    1,
    1,
    "expected one input file",
};

static const cli_option_t arch_options[] = {
    {"set", 0, "KEY=VALUE", opt_set, "override one config value (repeatable)"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t arch_command = {
    "arch",
    "usage: ncsim arch [NAME|FILE.json] [--set KEY=VALUE ...]\n"
    "\n"
    "Without NAME, list the built-in presets. With NAME (a preset or a config file), print\n"
    "its full resolved configuration as JSON, after any --set overrides.\n",
    arch_options,
    22,
    NULL,
    0,
    1,
    "expected at most one preset name or config file",
};

/* PROG through the public API, for the memory sizes of --arch (else the program's .arch,
 * else trn1); the diagnostics printed. 0 or the exit code. */
static int load_program(const char *cmd, const char *path, const char *arch_name,
                        ncsim_program_t **prog)
{
    ncsim_arch_t *arch = NULL;
    ncsim_status_t st = arch_name ? ncsim_arch_load(arch_name, &arch) : NCSIM_OK;
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim %s: %s\n", cmd, ncsim_last_error());
        return cli_exit(st == NCSIM_IO || st == NCSIM_NOMEM ? st : NCSIM_USAGE);
    }
    st = ncsim_program_load_file(path, arch, prog);
    ncsim_arch_free(arch);
    if (st != NCSIM_OK) {
        fprintf(stderr, "%s\n", ncsim_last_error()); /* every diagnostic, FILE:LINE:COL: ... */
        return cli_exit(st);
    }
    return 0;
}

static int cmd_asm(int argc, char **argv)
{
    prog_args_t a = {0};
    int first;
    int rc = cli_parse(&asm_command, argc, argv, &a, &first);
    if (rc >= 0)
        return rc;
    if (!a.out) {
        fputs("ncsim asm: missing -o OUTPUT\n", stderr);
        cli_print_help(&asm_command, stderr);
        return 2;
    }
    static cli_outputs_t outputs;
    if ((rc = cli_output_begin(&outputs, "asm", a.out, argv[first], a.arch)))
        return rc;
    ncsim_program_t *prog = NULL;
    if ((rc = load_program("asm", argv[first], a.arch, &prog)))
        return cli_output_end(&outputs, rc);
    void *buf = NULL;
    size_t len = 0;
    ncsim_status_t st = ncsim_program_save(prog, &buf, &len);
    ncsim_program_free(prog);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim asm: cannot encode: %s\n", ncsim_last_error());
        return cli_output_end(&outputs, cli_exit(st));
    }
    rc = cli_output_write(&outputs, a.out, buf, len);
    ncsim_free(buf);
    return cli_output_end(&outputs, rc);
}

static int cmd_dis(int argc, char **argv)
{
    prog_args_t a = {.out = "-"};
    int first;
    int rc = cli_parse(&dis_command, argc, argv, &a, &first);
    if (rc >= 0)
        return rc;
    static cli_outputs_t outputs;
    if ((rc = cli_output_begin(&outputs, "dis", a.out, argv[first], a.arch)))
        return rc;
    ncsim_program_t *prog = NULL;
    if ((rc = load_program("dis", argv[first], a.arch, &prog)))
        return cli_output_end(&outputs, rc);
    char *text = NULL;
    ncsim_status_t st = ncsim_program_disassemble(prog, &text);
    ncsim_program_free(prog);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim dis: %s\n", ncsim_last_error());
        return cli_output_end(&outputs, cli_exit(st));
    }
    rc = cli_output_write(&outputs, a.out, text, strlen(text));
    ncsim_free(text);
    return cli_output_end(&outputs, rc);
}

/* The "description" of a preset (its JSON through the API), or why it cannot be loaded. */
static void print_preset(const char *name)
{
    ncsim_arch_t *a = NULL;
    char *text = NULL;
    json_t *root = NULL;
    if (ncsim_arch_load(name, &a) == NCSIM_OK && ncsim_arch_to_json(a, &text) == NCSIM_OK &&
        (root = json_loads(text, 0, NULL)) != NULL) {
        const char *d = json_string_value(json_object_get(root, "description"));
        printf("%-14s %s\n", name, d ? d : "");
    } else {
        printf("%-14s (cannot load: %s)\n", name, ncsim_last_error());
    }
    json_decref(root);
    ncsim_free(text);
    ncsim_arch_free(a);
}

static int cmd_arch(int argc, char **argv)
{
    prog_args_t args = {0};
    int first;
    int rc = cli_parse(&arch_command, argc, argv, &args, &first);
    if (rc >= 0)
        return rc;
    if (first == argc) {
        for (size_t i = 0; ncsim_preset_name(i); i++)
            print_preset(ncsim_preset_name(i));
        return 0;
    }
    ncsim_arch_t *a = NULL;
    ncsim_status_t st = ncsim_arch_load(argv[first], &a);
    for (int i = 0; st == NCSIM_OK && i < args.nsets; i++)
        st = ncsim_arch_set(a, args.sets[i]);
    if (st == NCSIM_OK)
        st = ncsim_arch_validate(a);
    char *json = NULL;
    if (st == NCSIM_OK)
        st = ncsim_arch_to_json(a, &json);
    ncsim_arch_free(a);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim arch: %s\n", ncsim_last_error());
        return cli_exit(st);
    }
    fputs(json, stdout);
    ncsim_free(json);
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
    if (strcmp(cmd, "viz") == 0)
        return cli_viz(sub_argc, sub_argv);
    if (strcmp(cmd, "sweep") == 0)
        return cli_sweep(sub_argc, sub_argv);
    if (strcmp(cmd, "validate") == 0)
        return cli_validate(sub_argc, sub_argv);
    if (strcmp(cmd, "fit") == 0)
        return cli_fit(sub_argc, sub_argv);
    fprintf(stderr, "ncsim: unknown command '%s'\n\n%s", cmd, usage_main);
    return 2;
}
