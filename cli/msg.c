/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exit_status.h"
#include "msg.h"

int cli_verbosity = CLI_NORMAL;

/* Set once stderr is a pipe nobody reads (EPIPE; SIGPIPE is ignored):
 * nothing more is written, and redlease goes on with its work. */
static int stderr_gone;

static void put(const char *text, size_t len)
{
    if (stderr_gone) return;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(STDERR_FILENO, text + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            stderr_gone = errno == EPIPE;
            return;
        }
        off += (size_t)w;
    }
}

/* One line, in one write(2): lines from redlease and COMMAND, which share
 * stderr, do not interleave mid-line. */
static void vsay(const char *fmt, va_list ap)
{
    if (stderr_gone) return;
    char line[4096];
    static const char prefix[] = "redlease: ";
    size_t len = sizeof prefix - 1;
    memcpy(line, prefix, len);
    size_t room = sizeof line - len - 1; /* one byte kept for the '\n' */
    int n = vsnprintf(line + len, room, fmt, ap);
    if (n < 0) return;
    len += (size_t)n < room ? (size_t)n : room - 1; /* a long one is cut */
    line[len++] = '\n';
    put(line, len);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void cli_notice(const char *fmt, ...)
{
    if (cli_verbosity < CLI_NORMAL) return;
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void cli_verbose(const char *fmt, ...)
{
    if (cli_verbosity < CLI_VERBOSE) return;
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    static const char hint[] = "Try 'redlease --help'.\n";
    put(hint, sizeof hint - 1);
    return CLI_EXIT_USAGE;
}
