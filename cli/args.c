/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "exit_status.h"
#include "msg.h"

void cli_args_init(cli_args *a, int argc, char **argv, const cli_opt *const *tables)
{
    memset(a, 0, sizeof *a);
    a->argc = argc;
    a->argv = argv;
    a->tables = tables;
    a->i = 1; /* argv[0] names the command */
}

static const cli_opt *find(const cli_args *a, const char *name, size_t len, char letter)
{
    for (const cli_opt *const *t = a->tables; *t; t++) {
        for (const cli_opt *o = *t; o->name; o++) {
            if (letter ? o->letter == letter
                       : strlen(o->name) == len && memcmp(o->name, name, len) == 0)
                return o;
        }
    }
    return NULL;
}

/* The value of an option that takes one: inline (--x=V, -xV) or the next
 * argument. */
static int take_value(cli_args *a, const cli_opt *o, const char *inline_value)
{
    if (inline_value) {
        a->value = inline_value;
    } else if (a->i < a->argc) {
        a->value = a->argv[a->i++];
    } else {
        cli_usage_error("%s needs a value", a->name);
        return CLI_ARG_ERROR;
    }
    return o->id;
}

static int next_letter(cli_args *a)
{
    char letter = *a->cluster++;
    snprintf(a->name, sizeof a->name, "-%c", letter);
    const cli_opt *o = find(a, NULL, 0, letter);
    if (!o) {
        cli_usage_error("unknown option %s", a->name);
        return CLI_ARG_ERROR;
    }
    if (!o->takes_value) {
        if (!*a->cluster) a->cluster = NULL;
        a->value = NULL;
        return o->id;
    }
    const char *rest = *a->cluster ? a->cluster : NULL;
    a->cluster = NULL;
    return take_value(a, o, rest);
}

static int next_long(cli_args *a, const char *arg)
{
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    snprintf(a->name, sizeof a->name, "--%.*s", (int)(len < 40 ? len : 40), name);
    const cli_opt *o = find(a, name, len, 0);
    if (!o) {
        cli_usage_error("unknown option %s", a->name);
        return CLI_ARG_ERROR;
    }
    if (!o->takes_value) {
        if (eq) {
            cli_usage_error("%s takes no value", a->name);
            return CLI_ARG_ERROR;
        }
        a->value = NULL;
        return o->id;
    }
    return take_value(a, o, eq ? eq + 1 : NULL);
}

int cli_args_next(cli_args *a)
{
    if (a->cluster) return next_letter(a);
    if (a->i >= a->argc) return CLI_ARG_DONE;
    const char *arg = a->argv[a->i++];
    if (strcmp(arg, "--") == 0) return CLI_ARG_DASHDASH;
    if (arg[0] == '-' && arg[1] == '-') return next_long(a, arg);
    if (arg[0] == '-' && arg[1]) {
        a->cluster = arg + 1;
        return next_letter(a);
    }
    a->value = arg;
    return CLI_ARG_POSITIONAL;
}

int cli_parse_number(const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    /* strtoll alone would take " 5", "+5", "-0" and stop at "5x". */
    if (s[0] < '0' || s[0] > '9') goto bad;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) goto bad;
    *out = v;
    return 0;
bad:
    return cli_usage_error("%s: expected a whole number from %lld to %lld, got '%s'", what,
                           (long long)lo, (long long)hi, s);
}

int cli_args_number(const cli_args *a, int64_t lo, int64_t hi, int64_t *out)
{
    return cli_parse_number(a->name, a->value, lo, hi, out);
}
