/*
 * options.h -- the options of every ncsim command, declared as tables (cli/options.c).
 *
 * A command lists its options once, one row each: the long name, an optional one-letter
 * name, the value it takes (as the help shows it: "N", "FILE"; NULL for a flag), the function
 * that stores the value, and the help text. From that one table come the getopt parsing, the
 * `--help` text and the messages for bad options, the same for every command:
 *
 *   ncsim CMD: unknown or ambiguous option '--bogus'   then the help; exit 2
 *   ncsim CMD: unknown option '-x'                      then the help; exit 2
 *   ncsim CMD: option '--top' needs a value             then the help; exit 2
 *   ncsim CMD: --top wants a count, not 'x'             (the row's function) exit 2
 *   ncsim CMD: expected one spec file                   (wrong number of operands), then the
 *                                                       help; exit 2
 *
 * Adding an option is adding a row (and its function when the value needs checking).
 */
#ifndef NCSIM_CLI_OPTIONS_H
#define NCSIM_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Store VALUE (NULL for a flag) of option NAME into the command's arguments ARGS. 0, or -1
 * after printing why the value is refused ("ncsim CMD: --NAME wants ..."). */
typedef int (*cli_option_fn)(void *args, const char *name, const char *value);

typedef struct cli_option {
    const char *name;   /* the long name, without "--"; NULL ends the table */
    char letter;        /* the one-letter name ('q' for -q), or 0 */
    const char *value;  /* what the value is called in the help, NULL: a flag */
    cli_option_fn fn;
    const char *help;   /* one or more lines, '\n'-separated, without the final newline */
} cli_option_t;

typedef struct cli_command {
    const char *name;          /* "sweep": messages start "ncsim sweep: " */
    const char *head;          /* the usage lines and what the command does, up to the
                                * options (ends with a newline) */
    const cli_option_t *options;
    int column;                /* where the help of an option starts */
    const char *tail;          /* after the options: notes, exit codes (may be NULL) */
    int min_operands, max_operands; /* files and names after the options (max -1: any) */
    const char *operands;      /* what to say when their number is wrong: "expected one
                                * program" */
} cli_command_t;

/* The whole --help text of CMD to OUT. */
void cli_print_help(const cli_command_t *cmd, FILE *out);

/*
 * Parse ARGV (ARGV[0] is the command's name) by CMD's table into ARGS. Returns -1 when the
 * command goes on, with its operands at ARGV[*first] .. ARGV[ARGC - 1]; 0 after printing the
 * help for --help or -h; 2 after printing why the command line is wrong (and, for an unknown
 * option or a wrong number of operands, the help) on stderr.
 */
int cli_parse(const cli_command_t *cmd, int argc, char **argv, void *args, int *first);

/* Value helpers for the rows' functions: 0 when ARG is entirely a number of that kind. */
int cli_parse_u64(const char *arg, uint64_t *v);  /* decimal digits only */
int cli_parse_double(const char *arg, double *v); /* a finite real */

#endif
