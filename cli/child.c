#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "child.h"
#include "exit_status.h"
#include "signals.h"

/* In the child, before exec. redlease is single-threaded, so the child may
 * use the C library freely (setenv, stdio). */
static void become_command(char *const argv[], const cli_child_env *env, pid_t parent)
{
    cli_signals_reset_in_child();
#ifdef __linux__
    /* Dies with redlease. Set after fork, so redlease may already be gone:
     * then the new parent is someone else and nobody renews the lease. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(CLI_EXIT_FAILED);
#else
    (void)parent;
#endif
    char fence[24];
    snprintf(fence, sizeof fence, "%" PRIu64, env->fence);
    if (setenv("REDLEASE_KEY", env->key, 1) != 0 || setenv("REDLEASE_TOKEN", env->token, 1) != 0 ||
        (env->fencing ? setenv("REDLEASE_FENCE", fence, 1) : unsetenv("REDLEASE_FENCE")) != 0) {
        fprintf(stderr, "redlease: cannot set COMMAND's environment: %s\n", strerror(errno));
        _exit(CLI_EXIT_FAILED);
    }
    execvp(argv[0], argv);
    int e = errno;
    fprintf(stderr, "redlease: %s: %s\n", argv[0], strerror(e));
    _exit(e == ENOENT || e == ENOTDIR ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

pid_t cli_child_spawn(char *const argv[], const cli_child_env *env)
{
    pid_t parent = getpid();
    /* Blocked across fork: the child must not run redlease's handler. */
    cli_signals_block();
    pid_t pid = fork();
    if (pid == 0) become_command(argv, env, parent);
    int e = errno;
    cli_signals_unblock();
    errno = e;
    return pid;
}

int cli_child_exit_status(int wait_status)
{
    if (WIFSIGNALED(wait_status)) return CLI_EXIT_SIGNAL_BASE + WTERMSIG(wait_status);
    return WEXITSTATUS(wait_status);
}
