/* SPDX-License-Identifier: MIT */
/* Where the example programs find Redis: REDLEASE_SOCKET (a unix socket),
 * else REDLEASE_HOST and REDLEASE_PORT (default 127.0.0.1:6379). Your own
 * program fills redlease_client_options from its configuration instead. */
#ifndef REDLEASE_EXAMPLE_ENV_H
#define REDLEASE_EXAMPLE_ENV_H

#include <stdio.h>
#include <stdlib.h>

#include <redlease.h>

static inline void example_server_from_env(redlease_client_options *o)
{
    o->unix_path = getenv("REDLEASE_SOCKET");
    if (getenv("REDLEASE_HOST")) o->host = getenv("REDLEASE_HOST");
    if (getenv("REDLEASE_PORT")) o->port = atoi(getenv("REDLEASE_PORT"));
}

/* Why an acquire failed: the status and, for an error, the client's own
 * text for it (Redis's words, or the connection's), which says what to fix. */
static inline const char *example_why(const redlease_lock *lk, int status)
{
    static char why[200];
    const char *text = redlease_client_errstr(redlease_lock_client(lk));
    if (status == REDLEASE_EBUSY || status == REDLEASE_ECANCELED || !text[0])
        return redlease_strerror(status);
    snprintf(why, sizeof why, "%s (%s)", redlease_strerror(status), text);
    return why;
}

#endif
