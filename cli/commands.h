/* SPDX-License-Identifier: MIT */
/* The subcommands; each takes its arguments after the command name
 * (argv[0] is "run" or "status") and returns the exit status. */
#ifndef REDLEASE_CLI_COMMANDS_H
#define REDLEASE_CLI_COMMANDS_H

#include <stdio.h>

int cli_run(int argc, char **argv);
int cli_status(int argc, char **argv);

/* The --help text: a summary of redlease(1). */
void cli_help(FILE *out);

#endif
