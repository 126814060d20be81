/* SPDX-License-Identifier: MIT */
/* Command-line options: a small table-driven reader, so that options may
 * come before or after RESOURCE and "--" stays where the user put it (GNU
 * getopt_long would move it). Accepts --name VALUE, --name=VALUE, -x VALUE,
 * -xVALUE and clustered flags (-qn). */
#ifndef REDLEASE_CLI_ARGS_H
#define REDLEASE_CLI_ARGS_H

#include <stdint.h>

typedef struct cli_opt {
    const char *name; /* long name without "--"; NULL ends a table */
    char letter;      /* short name, or 0 */
    int takes_value;
    int id;           /* > 0 */
} cli_opt;

enum {
    CLI_ARG_DONE = 0,        /* no arguments left */
    CLI_ARG_POSITIONAL = -1, /* a.value is an argument that is not an option */
    CLI_ARG_DASHDASH = -2,   /* "--": a.i is the index of what follows it */
    CLI_ARG_ERROR = -3       /* a usage error was printed */
};

typedef struct cli_args {
    int argc;
    char **argv;
    int i;                        /* next argument to read */
    const char *cluster;          /* rest of a "-abc" being read, or NULL */
    const cli_opt *const *tables; /* NULL-terminated list of tables */
    const char *value;            /* the option's value, or the positional */
    char name[48];                /* the option as written ("--ttl", "-t"), for messages */
} cli_args;

/* Reads argv[1..argc-1]: argv[0] names the command. */
void cli_args_init(cli_args *a, int argc, char **argv, const cli_opt *const *tables);
/* An option id (> 0) or one of the CLI_ARG_ values above. */
int cli_args_next(cli_args *a);

/* Parses a->value as a whole decimal number in [lo, hi] (no sign, no
 * spaces, no suffix). 0, or CLI_EXIT_USAGE after printing why. */
int cli_args_number(const cli_args *a, int64_t lo, int64_t hi, int64_t *out);

/* The same for a value that did not come from an option (an environment
 * variable): what names it in the message. */
int cli_parse_number(const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out);

#endif
