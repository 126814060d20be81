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
} cli_child_env;

/* The pid of the child running argv[0] with argv, or -1 (errno from fork).
 * If the exec fails the child says why on stderr and exits 127 (not
 * found) or 126 (not executable), as shells do. On Linux the child gets
 * SIGKILL when redlease dies (PR_SET_PDEATHSIG), so COMMAND never goes on
 * unprotected by a lease nobody renews. */
pid_t cli_child_spawn(char *const argv[], const cli_child_env *env);

/* COMMAND's exit status as a shell reports it: its code, or 128 + N if it
 * died of signal N. */
int cli_child_exit_status(int wait_status);

#endif
