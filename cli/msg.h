/* SPDX-License-Identifier: MIT */
/* Messages on stderr, all prefixed "redlease: ". */
#ifndef REDLEASE_CLI_MSG_H
#define REDLEASE_CLI_MSG_H

enum cli_verbosity { CLI_QUIET = -1, CLI_NORMAL = 0, CLI_VERBOSE = 1 };

/* Set once from --quiet / --verbose. */
extern int cli_verbosity;

#if defined(__GNUC__) || defined(__clang__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* An error: printed even with --quiet. */
void cli_error(const char *fmt, ...) CLI_PRINTF(1, 2);
/* An outcome worth telling (contention, a lost lease): not with --quiet. */
void cli_notice(const char *fmt, ...) CLI_PRINTF(1, 2);
/* What happens as it happens: only with --verbose. */
void cli_verbose(const char *fmt, ...) CLI_PRINTF(1, 2);
/* A usage error: the message, then how to get help. Returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) CLI_PRINTF(1, 2);

#endif
