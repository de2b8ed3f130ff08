/*
 * options.c -- option tables into getopt_long, --help text and messages (options.h).
 */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTIONS 64

static size_t count(const cli_option_t *o)
{
    size_t n = 0;
    while (o && o[n].name)
        n++;
    return n;
}

void cli_print_help(const cli_command_t *cmd, FILE *out)
{
    fputs(cmd->head, out);
    for (const cli_option_t *o = cmd->options; o && o->name; o++) {
        char left[128];
        int n = snprintf(left, sizeof left, "  %s%s--%s%s%s", o->letter ? "-" : "",
                         o->letter ? (char[]){o->letter, ',', ' ', 0} : "", o->name,
                         o->value ? " " : "", o->value ? o->value : "");
        /* the help at the column, or two spaces after a name too long for it */
        fprintf(out, "%s%*s", left, n < cmd->column - 1 ? cmd->column - n : 2, "");
        const char *h = o->help;
        for (;;) {
            size_t len = strcspn(h, "\n");
            fprintf(out, "%.*s\n", (int)len, h);
            if (!h[len])
                break;
            h += len + 1;
            fprintf(out, "%*s", cmd->column, "");
        }
    }
    if (cmd->tail)
        fputs(cmd->tail, out);
}

int cli_parse(const cli_command_t *cmd, int argc, char **argv, void *args, int *first)
{
    size_t n = count(cmd->options);
    if (n > MAX_OPTIONS) { /* a table too long for this file: a bug, found by every test */
        fprintf(stderr, "ncsim %s: too many options in its table\n", cmd->name);
        return 4;
    }
    struct option longs[MAX_OPTIONS + 2];
    char shorts[2 * MAX_OPTIONS + 4] = ":h"; /* ':': a missing value is told apart */
    size_t ns = 2;
    for (size_t i = 0; i < n; i++) {
        const cli_option_t *o = &cmd->options[i];
        longs[i] = (struct option){o->name, o->value ? required_argument : no_argument, 0,
                                   256 + (int)i};
        if (o->letter) {
            shorts[ns++] = o->letter;
            if (o->value)
                shorts[ns++] = ':';
        }
    }
    shorts[ns] = 0;
    longs[n] = (struct option){"help", no_argument, 0, 'h'};
    longs[n + 1] = (struct option){0, 0, 0, 0};
    int c;
    optind = 1;
    opterr = 0; /* the messages are ours, in the form of every other one */
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const cli_option_t *o = NULL;
        if (c >= 256 && c < 256 + (int)n)
            o = &cmd->options[c - 256];
        for (size_t i = 0; !o && c != 'h' && c != '?' && c != ':' && i < n; i++)
            if (cmd->options[i].letter == c)
                o = &cmd->options[i];
        if (o) {
            if (o->fn(args, o->name, o->value ? optarg : NULL))
                return 2;
        } else if (c == 'h') {
            cli_print_help(cmd, stdout);
            return 0;
        } else if (c == ':') {
            if (optopt >= 256 && optopt < 256 + (int)n)
                fprintf(stderr, "ncsim %s: option '--%s' needs a value\n", cmd->name,
                        cmd->options[optopt - 256].name);
            else
                fprintf(stderr, "ncsim %s: option '-%c' needs a value\n", cmd->name, optopt);
            cli_print_help(cmd, stderr);
            return 2;
        } else {
            if (optopt >= 256 && optopt < 256 + (int)n)
                fprintf(stderr, "ncsim %s: option '--%s' takes no value\n", cmd->name,
                        cmd->options[optopt - 256].name);
            else if (optopt > 0 && optopt < 256)
                fprintf(stderr, "ncsim %s: unknown option '-%c'\n", cmd->name, optopt);
            else
                fprintf(stderr, "ncsim %s: unknown or ambiguous option '%s'\n", cmd->name,
                        argv[optind - 1]);
            cli_print_help(cmd, stderr);
            return 2;
        }
    }
    int operands = argc - optind;
    if (operands < cmd->min_operands || (cmd->max_operands >= 0 && operands > cmd->max_operands)) {
        fprintf(stderr, "ncsim %s: %s\n", cmd->name, cmd->operands);
        cli_print_help(cmd, stderr);
        return 2;
    }
    *first = optind;
    return -1;
}

int cli_parse_u64(const char *arg, uint64_t *v)
{
    if (!arg || *arg < '0' || *arg > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(arg, &end, 10);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

int cli_parse_double(const char *arg, double *v)
{
    if (!arg || !*arg)
        return -1;
    char *end;
    errno = 0;
    double x = strtod(arg, &end);
    if (errno || *end || !isfinite(x))
        return -1;
    *v = x;
    return 0;
}
