/* SPDX-License-Identifier: MIT */
/* Re-entry across processes (man 1, INHERITED LEASES): a run whose
 * environment names, for its own resource and kind, a lease that the
 * token there still holds in Redis joins that lease instead of waiting
 * for it, as flock(1) on an inherited descriptor does. What the
 * environment says is never trusted alone: the token is checked on the
 * servers the run was given, before COMMAND starts and while it runs. */
#ifndef REDLEASE_CLI_INHERIT_H
#define REDLEASE_CLI_INHERIT_H

#include <stdint.h>

#include "server.h"

typedef struct cli_inherit {
    char *lock, *holders; /* the resource's keys (redlease_key) */
    char token[33];       /* REDLEASE_TOKEN */
    int64_t limit;        /* the outer lease's kind: a semaphore's limit, */
    int shared;           /* shared, or neither (a mutex, exclusive) */
} cli_inherit;

/* What the command line asks for. */
typedef struct cli_inherit_ask {
    const char *resource;
    int64_t limit, weight; /* 0: a mutex */
    int shared, fencing;
} cli_inherit_ask;

enum {
    CLI_INHERIT_NONE = 0, /* nothing to join: acquire as usual (a -v note said why) */
    CLI_INHERIT_OFFERED,  /* the environment offers this resource's lease, of this kind */
    CLI_INHERIT_FAILED    /* out of memory (said) */
};
/* Reads REDLEASE_KEY, REDLEASE_TOKEN, REDLEASE_LIMIT, REDLEASE_WEIGHT,
 * REDLEASE_SHARED and REDLEASE_FENCE against what the run asks for;
 * when OFFERED, *in holds the keys and token (cli_inherit_free). */
int cli_inherit_find(cli_inherit *in, const cli_server *s, const cli_inherit_ask *ask);
void cli_inherit_free(cli_inherit *in);

enum {
    CLI_INHERIT_HOLDS = 1, /* the token holds the lease: *left_ms it lasts at least (-1: no expiry) */
    CLI_INHERIT_GONE = 0,  /* it does not (no longer, or never on these servers) */
    CLI_INHERIT_UNSURE = -1 /* cannot tell: Redis unavailable (why) */
};
/* Asks Redis, on s's topology: one server (with --sentinel, the primary
 * the Sentinels name now; with --cluster, the node serving the key), or
 * with --quorum every server, the token holding while a majority has it
 * (GONE when too few can still say yes). Blocks up to the timeout for
 * each server. */
int cli_inherit_check(const cli_inherit *in, cli_server *s, int64_t *left_ms, char *why, size_t size);

#endif
