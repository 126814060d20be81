/* SPDX-License-Identifier: MIT */
/* redlease status: is RESOURCE held, and for how much longer? The library
 * has no inspect call, so this asks Redis itself with hiredis's
 * synchronous API, for the keys the library uses: redlease_key() names
 * the lock and its fencing counter (man 3 redlease, KEYS). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "args.h"
#include "commands.h"
#include "exit_status.h"
#include "msg.h"
#include "server.h"
#include "addr.h" /* the library's address parser */

enum { OPT_SHOW_TOKEN = 1, OPT_QUIET, OPT_HELP };

static const cli_opt status_opts[] = {
    {"show-token", 0, 0, OPT_SHOW_TOKEN},
    {"quiet", 'q', 0, OPT_QUIET},
    {"help", 'h', 0, OPT_HELP},
    {NULL, 0, 0, 0},
};

typedef struct status_query {
    cli_server server;
    const char *resource;
    int show_token;
    /* --cluster: where a redirect sends us (MOVED, or ASK: behind ASKING) */
    char node_host[256];
    int node_port, asking;
    int legacy; /* asking for redlease 0.1.0's keys (prefix + name) */
} status_query;

/* How many redirects a status follows (a Cluster moving a slot twice). */
#define MAX_REDIRECTS 5
#define REDIRECTED (-2)

static int take_resource(status_query *q, const char *arg)
{
    if (q->resource) return cli_usage_error("status: one RESOURCE only ('%s')", arg);
    q->resource = arg;
    return 0;
}

/* 0, CLI_EXIT_USAGE, or -1 when --help was printed. */
static int parse(status_query *q, int argc, char **argv)
{
    static const cli_opt *const tables[] = {status_opts, cli_server_opts, NULL};
    cli_args a;
    cli_args_init(&a, argc, argv, tables);
    int id;
    while ((id = cli_args_next(&a)) != CLI_ARG_DONE) {
        int rc = 0;
        switch (id) {
        case CLI_ARG_ERROR: return CLI_EXIT_USAGE;
        case CLI_ARG_DASHDASH: /* what follows is RESOURCE, even "-x" */
            while (a.i < argc && !rc) rc = take_resource(q, argv[a.i++]);
            break;
        case CLI_ARG_POSITIONAL: rc = take_resource(q, a.value); break;
        case OPT_SHOW_TOKEN: q->show_token = 1; break;
        case OPT_QUIET: cli_verbosity = CLI_QUIET; break;
        case OPT_HELP: cli_help(stdout); return -1;
        default: rc = cli_server_take(&q->server, &a, id); break;
        }
        if (rc) return CLI_EXIT_USAGE;
    }
    if (!q->resource) return cli_usage_error("status: missing RESOURCE");
    size_t len = strlen(q->resource);
    if (len == 0 || len > REDLEASE_MAX_RESOURCE)
        return cli_usage_error("RESOURCE must be 1 to %d bytes long", REDLEASE_MAX_RESOURCE);
    return cli_server_finish(&q->server);
}

/* Errors go to stderr unless --quiet: the exit status says it all. */
static int unavailable(const status_query *q, const char *what, const char *why)
{
    if (cli_verbosity > CLI_QUIET)
        cli_error("Redis at %s: %s%s%s", q->server.where, what, what[0] ? ": " : "", why);
    return CLI_EXIT_UNAVAILABLE;
}

/* Why a synchronous call failed; hiredis says "Resource temporarily
 * unavailable" for a read that timed out. */
static const char *failure(const status_query *q, const redisContext *ctx)
{
    static char why[64];
    if (ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        snprintf(why, sizeof why, "no reply within %lld ms", (long long)q->server.timeout_ms);
        return why;
    }
    return ctx->errstr;
}

/* Runs one command; NULL after reporting a failure or an error reply. */
static redisReply *command(const status_query *q, redisContext *ctx, int argc, const char **argv)
{
    redisReply *rep = redisCommandArgv(ctx, argc, argv, NULL);
    if (!rep) {
        unavailable(q, argv[0], failure(q, ctx));
        return NULL;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        unavailable(q, argv[0], rep->str);
        freeReplyObject(rep);
        return NULL;
    }
    return rep;
}

static redisContext *connect_and_login(const status_query *q)
{
    const cli_server *s = &q->server;
    struct timeval tv = {(time_t)(s->timeout_ms / 1000), (suseconds_t)(s->timeout_ms % 1000 * 1000)};
    redisContext *ctx = s->socket ? redisConnectUnixWithTimeout(s->socket, tv)
                                  : redisConnectWithTimeout(s->host, s->port, tv);
    if (!ctx || ctx->err) {
        unavailable(q, "", ctx ? ctx->errstr : "out of memory");
        if (ctx) redisFree(ctx);
        return NULL;
    }
    if (redisSetTimeout(ctx, tv) != REDIS_OK) { /* before TLS: it bounds the handshake */
        unavailable(q, "", "cannot set the command timeout");
        redisFree(ctx);
        return NULL;
    }
    char why[300];
    if (cli_server_start_tls(s, ctx, why, sizeof why) != 0) {
        unavailable(q, "", why);
        redisFree(ctx);
        return NULL;
    }
    redisReply *rep = NULL;
    int ok = 1;
    if (ok && s->password) {
        const char *auth_user[3] = {"AUTH", s->user, s->password};
        const char *auth[2] = {"AUTH", s->password};
        ok = (rep = s->user ? command(q, ctx, 3, auth_user) : command(q, ctx, 2, auth)) != NULL;
        freeReplyObject(rep);
    }
    if (ok && s->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", s->db);
        const char *select[2] = {"SELECT", db};
        ok = (rep = command(q, ctx, 2, select)) != NULL;
        freeReplyObject(rep);
    }
    if (!ok) { /* command() said why */
        redisFree(ctx);
        return NULL;
    }
    return ctx;
}

/* 32 lowercase hex digits: what every redlease version writes. */
static int is_token(const char *s, size_t len)
{
    if (len != 32) return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* Connects (following a Cluster's redirects, from the first node listed)
 * and asks about key and fence_key: CLI_EXIT_HELD, CLI_EXIT_FREE, or
 * CLI_EXIT_UNAVAILABLE (said why). */
static int ask(status_query *q, redisContext *ctx, const char *key, const char *fence_key);
static int query(status_query *q, const char *key, const char *fence_key)
{
    int rc = REDIRECTED;
    const char *host = q->server.host;
    int port = q->server.port;
    for (int hops = 0; rc == REDIRECTED && hops <= MAX_REDIRECTS; hops++) {
        if (hops) {
            q->server.host = q->node_host;
            q->server.port = q->node_port;
        }
        redisContext *ctx = connect_and_login(q);
        rc = ctx ? ask(q, ctx, key, fence_key) : CLI_EXIT_UNAVAILABLE;
        if (ctx) redisFree(ctx);
    }
    q->server.host = host; /* the next query starts from the seed again */
    q->server.port = port;
    q->asking = 0;
    return rc == REDIRECTED ? unavailable(q, "", "redirected too many times") : rc;
}

/* With --cluster, a MOVED or ASK answer: where to ask instead (into q),
 * REDIRECTED; 0 for any other answer. */
static int redirected(status_query *q, const redisReply *rep)
{
    int is_ask = strncmp(rep->str, "ASK ", 4) == 0;
    if (!q->server.cluster || (!is_ask && strncmp(rep->str, "MOVED ", 6) != 0)) return 0;
    const char *addr = strchr(rep->str + (is_ask ? 4 : 6), ' ');
    const char *h;
    size_t hn;
    int port;
    if (!addr || rdl_addr_parse(addr + 1, strlen(addr + 1), &h, &hn, &port) != 0 ||
        hn >= sizeof q->node_host)
        return 0;
    memcpy(q->node_host, h, hn);
    q->node_host[hn] = '\0';
    q->node_port = port;
    q->asking = is_ask;
    return REDIRECTED;
}

/* PTTL, the fence counter and (--show-token) the token, read at one
 * instant in a MULTI/EXEC; behind an ASK, one by one (ASKING counts for
 * the one command after it, which MULTI would be). REDIRECTED when a
 * Cluster node sends us elsewhere. */
static int ask(status_query *q, redisContext *ctx, const char *key, const char *fence_key)
{
    const char *multi[1] = {"MULTI"}, *exec[1] = {"EXEC"}, *asking[1] = {"ASKING"};
    const char *pttl[2] = {"PTTL", key}, *fence[2] = {"GET", fence_key}, *token[2] = {"GET", key};
    const char **cmds[3] = {pttl, fence, token};
    int n = q->show_token ? 3 : 2;
    if (q->legacy) { /* the lock key alone (0.1.0's counter is in another slot), with
                        its value: only a token makes it a lease */
        cmds[1] = token;
        n = 2;
    }
    int atomic = !q->asking;
    if (atomic) redisAppendCommandArgv(ctx, 1, multi, NULL);
    for (int i = 0; i < n; i++) {
        if (!atomic) redisAppendCommandArgv(ctx, 1, asking, NULL);
        redisAppendCommandArgv(ctx, 2, cmds[i], NULL);
    }
    if (atomic) redisAppendCommandArgv(ctx, 1, exec, NULL);
    int replies = atomic ? n + 2 : 2 * n;
    redisReply *rep = NULL, *got[3] = {NULL, NULL, NULL};
    int rc = 0;
    for (int i = 0; i < replies && !rc; i++) {
        freeReplyObject(rep);
        rep = NULL;
        if (redisGetReply(ctx, (void **)&rep) != REDIS_OK) {
            rc = unavailable(q, "", failure(q, ctx));
        } else if (rep->type == REDIS_REPLY_ERROR) {
            rc = redirected(q, rep);
            if (!rc) rc = unavailable(q, "", rep->str);
        } else if (!atomic && i % 2 == 1) {
            got[i / 2] = rep; /* PTTL, GET, GET */
            rep = NULL;
        }
    }
    if (!rc && atomic) {
        /* The EXEC reply: [PTTL, fence counter, token]. */
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != (size_t)n)
            rc = unavailable(q, "EXEC", "unexpected reply");
        for (int i = 0; !rc && i < n; i++) got[i] = rep->element[i];
    }
    if (!rc && got[0]->type != REDIS_REPLY_INTEGER) rc = unavailable(q, "PTTL", "unexpected reply");
    if (rc) {
        freeReplyObject(rep);
        for (int i = 0; !atomic && i < 3; i++) freeReplyObject(got[i]);
        return rc;
    }
    long long ms = got[0]->integer;
    const redisReply *counter = q->legacy ? NULL : got[1];
    const redisReply *tok = q->legacy ? got[1] : n == 3 ? got[2] : NULL;
    int held = ms != -2; /* -2: no such key; -1: a key without expiry */
    /* 0.1.0's keys are no hash tags of ours: only a token makes it a lease */
    if (q->legacy) held = held && tok && tok->type == REDIS_REPLY_STRING && is_token(tok->str, tok->len);
    if (q->legacy && !q->show_token) tok = NULL;
    if (cli_verbosity >= CLI_NORMAL && (held || !q->legacy)) {
        printf("%s: ", key);
        if (!held)
            printf("free");
        else if (ms == -1)
            printf("held, no expiry");
        else
            printf("held, %lld ms left", ms);
        if (tok && tok->type == REDIS_REPLY_STRING) printf(", token %s", tok->str);
        if (counter && counter->type == REDIS_REPLY_STRING) printf(", fence counter %s", counter->str);
        if (q->legacy) printf(" (the key of redlease 0.1.0: a holder of that version)");
        printf("\n");
        fflush(stdout);
    }
    freeReplyObject(rep);
    for (int i = 0; !atomic && i < 3; i++) freeReplyObject(got[i]);
    return held ? CLI_EXIT_HELD : CLI_EXIT_FREE;
}

/* Asks about 0.1.0's keys of the resource; rc becomes CLI_EXIT_HELD when
 * one holds a lease (unavailable stays free: this version's answer
 * stands). 0 when out of memory. */
static int rc_legacy_keys(status_query *q, int *rc)
{
    size_t plen = strlen(q->server.prefix), rlen = strlen(q->resource);
    char *key = malloc(plen + rlen + 1);
    if (!key) {
        cli_error("out of memory");
        return 0;
    }
    memcpy(key, q->server.prefix, plen);
    memcpy(key + plen, q->resource, rlen + 1);
    q->legacy = 1;
    if (query(q, key, NULL) == CLI_EXIT_HELD) *rc = CLI_EXIT_HELD;
    q->legacy = 0;
    free(key);
    return 1;
}

int cli_status(int argc, char **argv)
{
    status_query q;
    memset(&q, 0, sizeof q);
    cli_server_init(&q.server);
    int rc = parse(&q, argc, argv);
    if (rc) {
        cli_server_free(&q.server);
        return rc < 0 ? 0 : rc;
    }
    size_t rlen = strlen(q.resource), klen = 0, flen = 0;
    redlease_key(q.server.prefix, q.resource, rlen, REDLEASE_KEY_LOCK, NULL, 0, &klen);
    redlease_key(q.server.prefix, q.resource, rlen, REDLEASE_KEY_FENCE, NULL, 0, &flen);
    char *key = malloc(klen + 1), *fence_key = malloc(flen + 1);
    if (!key || !fence_key || !klen || !flen) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILED;
    } else {
        redlease_key(q.server.prefix, q.resource, rlen, REDLEASE_KEY_LOCK, key, klen + 1, &klen);
        redlease_key(q.server.prefix, q.resource, rlen, REDLEASE_KEY_FENCE, fence_key, flen + 1, &flen);
        char why[400];
        rc = CLI_EXIT_UNAVAILABLE;
        if (cli_server_find_primary(&q.server, why, sizeof why) != 0) {
            unavailable(&q, "", why); /* no Sentinel named the primary */
        } else {
            rc = query(&q, key, fence_key);
            /* Free by this version's keys: a holder of 0.1.0 (keys prefix +
             * name, no braces) still counts, while both versions run. */
            if (rc == CLI_EXIT_FREE && !rc_legacy_keys(&q, &rc)) rc = CLI_EXIT_FAILED;
        }
    }
    free(key);
    free(fence_key);
    cli_server_free(&q.server);
    return rc;
}
