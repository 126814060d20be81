/* redlease(1): a distributed flock(1) on Redis leases. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <redlease.h>

#include "commands.h"
#include "exit_status.h"
#include "msg.h"

int main(int argc, char **argv)
{
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
