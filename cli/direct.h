/* SPDX-License-Identifier: MIT */
/* Reading Redis directly, with hiredis's blocking API: what status asks
 * and what run checks before it joins an inherited lease (inherit.c),
 * with plain reads (no script: they work where scripts are denied) of the
 * keys the library names with redlease_key(). */
#ifndef REDLEASE_CLI_DIRECT_H
#define REDLEASE_CLI_DIRECT_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "server.h"

/* The most commands one read runs, and the most arguments of each. */
#define CLI_DIRECT_MAX 8
#define CLI_DIRECT_ARGS 6

/* What a read got: reply[i] is the answer to command i, owned by the
 * read (an error reply only from within MULTI/EXEC: WRONGTYPE...). */
typedef struct cli_direct_read {
    redisReply *reply[CLI_DIRECT_MAX];
    redisReply *owned[CLI_DIRECT_MAX + 1];
} cli_direct_read;

/* RESOURCE's key of that kind (redlease_key() with s's prefix),
 * malloc'd, or NULL: out of memory. */
char *cli_direct_key(const cli_server *s, const char *resource, int kind);

/* A blocking connection to s's server (host and port, or socket), with the
 * timeout, TLS, AUTH and SELECT of s; NULL and why. */
redisContext *cli_direct_connect(const cli_server *s, char *why, size_t size);

/* Runs n commands (cmd[i], argc[i] arguments) on s's server at one instant
 * (MULTI/EXEC; the keys of one resource are in one Cluster slot), and with
 * --cluster follows the node's redirects (MOVED; ASK, behind which they go
 * one by one, each after ASKING). 0 and the replies in *out (free them
 * with cli_direct_read_free), or -1 and why. */
int cli_direct_run(const cli_server *s, int n, const char *const cmd[][CLI_DIRECT_ARGS],
                   const int argc[], cli_direct_read *out, char *why, size_t size);
void cli_direct_read_free(cli_direct_read *r);

/* A whole number read from a string reply, or -1: the server's clock, a
 * deadline (a score, which Redis writes as a double), a weight. */
long long cli_direct_whole(const redisReply *r);

/* The server's clock in ms from TIME's reply, as the scripts' clock()
 * reads it; -1 if it is not TIME's. */
long long cli_direct_time_ms(const redisReply *time);

#endif
