/* SPDX-License-Identifier: MIT */
/* Starting COMMAND: fork, then in the child the environment below, the
 * signal state redlease started with, and execvp (PATH lookup). */
#ifndef REDLEASE_CLI_CHILD_H
#define REDLEASE_CLI_CHILD_H

#include <stdint.h>
#include <sys/types.h>

typedef struct cli_child_env {
    const char *key;   /* REDLEASE_KEY */
    const char *token; /* REDLEASE_TOKEN */
    int fencing;       /* REDLEASE_FENCE set (decimal) when nonzero, else unset */
    uint64_t fence;
    int64_t limit;     /* a semaphore's: REDLEASE_LIMIT and REDLEASE_WEIGHT set when */
    int64_t weight;    /* limit is nonzero, else unset */
    int shared;        /* REDLEASE_SHARED=1 when nonzero, else unset */
} cli_child_env;

/* 1 if redlease is in the foreground process group of its controlling
 * terminal: then COMMAND stays in redlease's process group, to use the
 * terminal and job control (^C, ^Z reach both). Otherwise (no terminal,
 * a background job, cron, systemd, timeout(1), setsid) COMMAND gets a
 * process group of its own, and redlease signals that whole group. */
int cli_in_terminal_foreground(void);

/* Forks a child that runs argv[0] with argv, and waits until it has
 * executed it or failed to. Returns the child's pid, or -1 (errno from
 * fork). *start_status is 0 if COMMAND runs, else what redlease should
 * exit with: 127 (not found), 126 (not executable), as shells do, or 125
 * (the child could not be set up); the reason was printed and the child,
 * still to be reaped, exits by itself. env NULL leaves the environment
 * as it is: a run that joined the lease it describes (inherit.h). The reason comes back over a
 * close-on-exec pipe rather than as the child's exit status, so it is right
 * even when that status is not the child's own (under valgrind).
 * With own_group, the child leads a new process group (its pid), set in
 * both processes so that it exists whichever runs first.
 * On Linux the child gets SIGKILL when redlease dies (PR_SET_PDEATHSIG),
 * so COMMAND never goes on unprotected by a lease nobody renews. */
pid_t cli_child_spawn(char *const argv[], const cli_child_env *env, int own_group,
                      int *start_status);

/* COMMAND's exit status as a shell reports it: its code, or 128 + N if it
 * died of signal N. */
int cli_child_exit_status(int wait_status);

#endif
