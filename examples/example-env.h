/* Where the example programs find Redis: REDLEASE_SOCKET (a unix socket),
 * else REDLEASE_HOST and REDLEASE_PORT (default 127.0.0.1:6379). Your own
 * program fills redlease_client_options from its configuration instead. */
#ifndef REDLEASE_EXAMPLE_ENV_H
#define REDLEASE_EXAMPLE_ENV_H

#include <stdlib.h>

#include <redlease.h>

static inline void example_server_from_env(redlease_client_options *o)
{
    o->unix_path = getenv("REDLEASE_SOCKET");
    if (getenv("REDLEASE_HOST")) o->host = getenv("REDLEASE_HOST");
    if (getenv("REDLEASE_PORT")) o->port = atoi(getenv("REDLEASE_PORT"));
}

#endif
