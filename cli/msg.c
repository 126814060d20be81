#include <stdarg.h>
#include <stdio.h>

#include "exit_status.h"
#include "msg.h"

int cli_verbosity = CLI_NORMAL;

static void vsay(const char *fmt, va_list ap)
{
    fputs("redlease: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
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
    fputs("Try 'redlease --help'.\n", stderr);
    return CLI_EXIT_USAGE;
}
