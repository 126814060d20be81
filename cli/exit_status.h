/* SPDX-License-Identifier: MIT */
/* Exit statuses of redlease(1); the man page's EXIT STATUS lists them. The
 * values follow sysexits.h (64, 69, 75) and timeout(1) (124-127), so
 * scripts can tell "did not run" from COMMAND's own status. */
#ifndef REDLEASE_CLI_EXIT_STATUS_H
#define REDLEASE_CLI_EXIT_STATUS_H

enum cli_exit {
    CLI_EXIT_HELD = 0,          /* status: the resource is held */
    CLI_EXIT_FREE = 1,          /* status: the resource is free */
    CLI_EXIT_USAGE = 64,        /* bad option or argument */
    CLI_EXIT_UNAVAILABLE = 69,  /* Redis unreachable, refused us, or answered an error */
    CLI_EXIT_BUSY = 75,         /* held by another holder (--no-wait, --wait ran out) */
    CLI_EXIT_LOST = 124,        /* the lease was lost while COMMAND ran */
    CLI_EXIT_FAILED = 125,      /* redlease itself failed (memory, fork, ...) */
    CLI_EXIT_NOEXEC = 126,      /* COMMAND found but not executable */
    CLI_EXIT_NOTFOUND = 127,    /* COMMAND not found */
    CLI_EXIT_SIGNAL_BASE = 128  /* + N: COMMAND (or the wait) ended by signal N */
};

#endif
