/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "child.h"
#include "exit_status.h"
#include "msg.h"
#include "signals.h"

/* What the child sends back when it cannot become COMMAND. */
typedef struct start_failure {
    int exec; /* 1: execvp failed; 0: setting up the child failed */
    int error;
} start_failure;

static void fail_start(int fd, int exec, int error)
{
    start_failure f = {exec, error};
    ssize_t n;
    do
        n = write(fd, &f, sizeof f);
    while (n < 0 && errno == EINTR);
    _exit(CLI_EXIT_FAILED);
}

int cli_in_terminal_foreground(void)
{
    /* /dev/tty is the controlling terminal, if there is one. */
    int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    pid_t fg = tcgetpgrp(fd);
    close(fd);
    return fg != -1 && fg == getpgrp();
}

/* NAME=value, or NAME removed when !set: a value redlease inherited must
 * never describe a lease it does not hold. 0, or -1 and errno. */
static int put_env(const char *name, int set, uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, value);
    return set ? setenv(name, text, 1) : unsetenv(name);
}

/* In the child, before exec; report_fd is close-on-exec. */
static void become_command(char *const argv[], const cli_child_env *env, int own_group,
                           pid_t parent, int report_fd)
{
    cli_signals_reset_in_child();
    if (own_group && setpgid(0, 0) != 0) fail_start(report_fd, 0, errno);
#ifdef __linux__
    /* Dies with redlease. Set after fork, so redlease may already be gone:
     * then the new parent is someone else and nobody renews the lease. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail_start(report_fd, 0, errno);
    if (getppid() != parent) _exit(CLI_EXIT_FAILED);
#else
    (void)parent;
#endif
    if (env && (setenv("REDLEASE_KEY", env->key, 1) != 0 || setenv("REDLEASE_TOKEN", env->token, 1) != 0 ||
        put_env("REDLEASE_FENCE", env->fencing, env->fence) != 0 ||
        put_env("REDLEASE_LIMIT", env->limit != 0, (uint64_t)env->limit) != 0 ||
        put_env("REDLEASE_WEIGHT", env->limit != 0, (uint64_t)env->weight) != 0 ||
        put_env("REDLEASE_SHARED", env->shared, 1) != 0))
        fail_start(report_fd, 0, errno);
    execvp(argv[0], argv);
    fail_start(report_fd, 1, errno);
}

/* Reads the child's report: nothing (EOF at exec) means COMMAND runs. */
static int read_start_status(int fd, const char *command)
{
    start_failure f;
    ssize_t n;
    do
        n = read(fd, &f, sizeof f);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof f) return 0;
    if (!f.exec) {
        cli_error("cannot set up COMMAND's process: %s", strerror(f.error));
        return CLI_EXIT_FAILED;
    }
    cli_error("%s: %s", command, strerror(f.error));
    return f.error == ENOENT || f.error == ENOTDIR ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC;
}

pid_t cli_child_spawn(char *const argv[], const cli_child_env *env, int own_group,
                      int *start_status)
{
    int report[2];
    if (pipe(report) != 0) return -1;
    for (int i = 0; i < 2; i++) fcntl(report[i], F_SETFD, FD_CLOEXEC);
    pid_t parent = getpid();
    /* Blocked across fork: the child must not run redlease's handler. */
    cli_signals_block();
    pid_t pid = fork();
    if (pid == 0) {
        close(report[0]);
        become_command(argv, env, own_group, parent, report[1]);
    }
    int e = errno;
    /* The child does it too: whichever runs first, the group exists before
     * redlease may signal it. EACCES once the child has executed COMMAND. */
    if (pid > 0 && own_group) setpgid(pid, pid);
    cli_signals_unblock();
    close(report[1]);
    if (pid > 0) *start_status = read_start_status(report[0], argv[0]);
    close(report[0]);
    errno = e;
    return pid;
}

int cli_child_exit_status(int wait_status)
{
    if (WIFSIGNALED(wait_status)) return CLI_EXIT_SIGNAL_BASE + WTERMSIG(wait_status);
    return WEXITSTATUS(wait_status);
}
