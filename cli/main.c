/* SPDX-License-Identifier: MIT */
/* redlease(1): a distributed flock(1) on Redis leases. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <redlease.h>

#include "commands.h"
#include "exit_status.h"
#include "msg.h"
#include "signals.h"

/* Opens /dev/null on each of 0, 1 and 2 that is closed: otherwise the
 * Redis socket could become fd 2, and messages would go to Redis. open()
 * takes the lowest free descriptor, which is the one being filled. */
static int fill_std_fds(void)
{
    for (int fd = 0; fd <= STDERR_FILENO; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int got = open("/dev/null", O_RDWR);
        if (got != fd) return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (fill_std_fds() != 0) return CLI_EXIT_FAILED; /* nowhere to say so */
    cli_signals_ignore_sigpipe();
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (!cmd) return cli_usage_error("missing command: run or status");
    if (strcmp(cmd, "run") == 0) return cli_run(argc - 1, argv + 1);
    if (strcmp(cmd, "status") == 0) return cli_status(argc - 1, argv + 1);
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        cli_help(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("redlease %s (library %s)\n", REDLEASE_VERSION, redlease_version());
        return 0;
    }
    return cli_usage_error("unknown command '%s' (expected run or status)", cmd);
}
