/* SPDX-License-Identifier: MIT */
/* Where Redis is and how to log in: the options run and status share.
 * Command line first, then REDLEASE_SOCKET / REDLEASE_HOST / REDLEASE_PORT,
 * then the library's defaults. The password never comes from the command
 * line (it would show in ps): REDLEASE_PASSWORD or --password-file. */
#ifndef REDLEASE_CLI_SERVER_H
#define REDLEASE_CLI_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <redlease.h>

#include "args.h"
#include "addr.h"      /* RDL_ADDR_NAME_MAX */
#include "transport.h" /* rdl_tls_config */

struct redisContext;

typedef struct cli_server {
    const char *host;
    int port;
    const char *socket;
    int db;
    const char *user;
    const char *password_file;
    char *password; /* owned; from the file or REDLEASE_PASSWORD */
    const char *prefix;
    int64_t timeout_ms; /* connect and command timeout */
    rdl_tls_config tls;       /* --tls, --cacert, --cert, --key, --sni, --insecure (the
                                 library's own type: the CLI starts TLS with its code) */
    const char *sentinels;    /* --sentinel HOST:PORT[,...], or NULL */
    const char *master;       /* --master NAME */
    const char *cluster;      /* --cluster HOST:PORT[,...], or NULL */
    const char *quorum;       /* --quorum HOST:PORT,HOST:PORT[,...], or NULL */
    int quorum_n;             /* how many servers it names */
    int64_t restart_guard;    /* --restart-guard MS|off: quorum_restart_guard_ms (0: the TTL) */
    int restart_guard_given;
    char seed_host[256];      /* the first of them (status starts there) */
    char *sentinel_password;  /* owned; REDLEASE_SENTINEL_PASSWORD */
    char *found_host;         /* owned: the primary a Sentinel named (status) */
    int host_given, port_given; /* on the command line */
    char where[300];    /* "unix:PATH" or "HOST:PORT", for messages */
    char node[RDL_ADDR_NAME_MAX]; /* one server (no --sentinel, --cluster, --quorum):
                                     the library's name of it (redlease_event.node),
                                     which leads its texts; else "" */
} cli_server;

/* The server options, for a command's list of option tables. */
extern const cli_opt cli_server_opts[];

void cli_server_init(cli_server *s);
/* Takes one of cli_server_opts (id, value in a). 0 or CLI_EXIT_USAGE. */
int cli_server_take(cli_server *s, const cli_args *a, int id);
/* After the command line: environment defaults, the password, checks.
 * 0 or CLI_EXIT_USAGE. */
int cli_server_finish(cli_server *s);
void cli_server_client_options(const cli_server *s, redlease_client_options *o);
/* Starts TLS on a blocking context when --tls was given (status talks to
 * hiredis itself), with the library's own set-up and checks. 0, or -1
 * and why. */
int cli_server_start_tls(const cli_server *s, struct redisContext *ctx, char *why, size_t size);
/* With --sentinel, for a command that talks to Redis itself (status): asks
 * the Sentinels in turn where the primary is, and points host and port
 * there. 0 (also without --sentinel), or -1 and why. */
int cli_server_find_primary(cli_server *s, char *why, size_t size);
/* Frees the password (wiped first). */
void cli_server_free(cli_server *s);

#endif
