/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "direct.h"
#include "addr.h" /* the library's address parser */

/* How many redirects a read follows (a Cluster moving a slot twice). */
#define MAX_REDIRECTS 5
#define REDIRECTED 1

char *cli_direct_key(const cli_server *s, const char *resource, int kind)
{
    size_t rlen = strlen(resource), len = 0;
    redlease_key(s->prefix, resource, rlen, kind, NULL, 0, &len);
    char *key = len ? malloc(len + 1) : NULL;
    if (key) redlease_key(s->prefix, resource, rlen, kind, key, len + 1, &len);
    return key;
}

/* Why a call on ctx failed; hiredis says "Resource temporarily
 * unavailable" for a read that timed out. */
static void failure(const cli_server *s, const redisContext *ctx, const char *what, char *why,
                    size_t size)
{
    if (ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK))
        snprintf(why, size, "%s%sno reply within %lld ms", what, what[0] ? ": " : "",
                 (long long)s->timeout_ms);
    else
        snprintf(why, size, "%s%s%s", what, what[0] ? ": " : "", ctx->errstr);
}

/* Runs one command whose reply is not needed: 0, or -1 and why. */
static int call(const cli_server *s, redisContext *ctx, int argc, const char **argv, char *why,
                size_t size)
{
    redisReply *rep = redisCommandArgv(ctx, argc, argv, NULL);
    if (!rep) {
        failure(s, ctx, argv[0], why, size);
        return -1;
    }
    int rc = rep->type == REDIS_REPLY_ERROR ? -1 : 0;
    if (rc) snprintf(why, size, "%s: %s", argv[0], rep->str);
    freeReplyObject(rep);
    return rc;
}

redisContext *cli_direct_connect(const cli_server *s, char *why, size_t size)
{
    struct timeval tv = {(time_t)(s->timeout_ms / 1000), (suseconds_t)(s->timeout_ms % 1000 * 1000)};
    redisContext *ctx = s->socket ? redisConnectUnixWithTimeout(s->socket, tv)
                                  : redisConnectWithTimeout(s->host, s->port, tv);
    if (!ctx || ctx->err) {
        snprintf(why, size, "%s", ctx ? ctx->errstr : "out of memory");
        if (ctx) redisFree(ctx);
        return NULL;
    }
    int ok = redisSetTimeout(ctx, tv) == REDIS_OK; /* before TLS: it bounds the handshake */
    if (!ok) snprintf(why, size, "cannot set the command timeout");
    ok = ok && cli_server_start_tls(s, ctx, why, size) == 0;
    if (ok && s->password) {
        const char *auth_user[3] = {"AUTH", s->user, s->password};
        const char *auth[2] = {"AUTH", s->password};
        ok = (s->user ? call(s, ctx, 3, auth_user, why, size) : call(s, ctx, 2, auth, why, size)) == 0;
    }
    if (ok && s->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", s->db);
        const char *select[2] = {"SELECT", db};
        ok = call(s, ctx, 2, select, why, size) == 0;
    }
    if (!ok) {
        redisFree(ctx);
        return NULL;
    }
    return ctx;
}

/* With --cluster, a MOVED or ASK answer: where to ask instead, REDIRECTED;
 * 0 for any other answer. */
static int redirected(const cli_server *s, const redisReply *rep, char *host, size_t hsize,
                      int *port, int *asking)
{
    int is_ask = strncmp(rep->str, "ASK ", 4) == 0;
    if (!s->cluster || (!is_ask && strncmp(rep->str, "MOVED ", 6) != 0)) return 0;
    const char *addr = strchr(rep->str + (is_ask ? 4 : 6), ' ');
    const char *h;
    size_t hn;
    if (!addr || rdl_addr_parse(addr + 1, strlen(addr + 1), &h, &hn, port) != 0 || hn >= hsize)
        return 0;
    memcpy(host, h, hn);
    host[hn] = '\0';
    *asking = is_ask;
    return REDIRECTED;
}

void cli_direct_read_free(cli_direct_read *r)
{
    for (int i = 0; i < CLI_DIRECT_MAX + 1; i++) freeReplyObject(r->owned[i]);
    memset(r, 0, sizeof *r);
}

/* One server's answers: 0, REDIRECTED (host, port, asking set), or -1 and why. */
static int run_on(const cli_server *s, redisContext *ctx, int n, const char *const cmd[][CLI_DIRECT_ARGS],
                  const int argc[], cli_direct_read *out, char *host, size_t hsize, int *port,
                  int *asking, char *why, size_t size)
{
    const char *multi[1] = {"MULTI"}, *exec[1] = {"EXEC"}, *ask[1] = {"ASKING"};
    int atomic = !*asking;
    if (atomic) redisAppendCommandArgv(ctx, 1, multi, NULL);
    for (int i = 0; i < n; i++) {
        if (!atomic) redisAppendCommandArgv(ctx, 1, ask, NULL);
        redisAppendCommandArgv(ctx, argc[i], (const char **)cmd[i], NULL);
    }
    if (atomic) redisAppendCommandArgv(ctx, 1, exec, NULL);
    int replies = atomic ? n + 2 : 2 * n, rc = 0;
    redisReply *rep = NULL;
    for (int i = 0; i < replies && !rc; i++) {
        freeReplyObject(rep);
        rep = NULL;
        if (redisGetReply(ctx, (void **)&rep) != REDIS_OK) {
            failure(s, ctx, "", why, size);
            rc = -1;
        } else if (rep->type == REDIS_REPLY_ERROR) {
            rc = redirected(s, rep, host, hsize, port, asking);
            if (!rc) snprintf(why, size, "%s", rep->str), rc = -1;
        } else if (!atomic && i % 2 == 1) {
            out->reply[i / 2] = out->owned[i / 2] = rep; /* in the order of cmd */
            rep = NULL;
        }
    }
    if (!rc && atomic) {
        /* The EXEC reply: one element for each command. */
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != (size_t)n) {
            snprintf(why, size, "EXEC: unexpected reply");
            rc = -1;
        }
        for (int i = 0; !rc && i < n; i++) out->reply[i] = rep->element[i];
        if (!rc) out->owned[CLI_DIRECT_MAX] = rep, rep = NULL;
    }
    freeReplyObject(rep);
    if (rc) cli_direct_read_free(out);
    return rc;
}

int cli_direct_run(const cli_server *s, int n, const char *const cmd[][CLI_DIRECT_ARGS],
                   const int argc[], cli_direct_read *out, char *why, size_t size)
{
    cli_server at = *s; /* the node asked, moved by redirects; owns nothing */
    char host[2][256];
    int asking = 0;
    memset(out, 0, sizeof *out);
    for (int hops = 0; hops <= MAX_REDIRECTS; hops++) {
        redisContext *ctx = cli_direct_connect(&at, why, size);
        if (!ctx) return -1;
        char *next = host[hops % 2]; /* at.host may be the other */
        int rc = run_on(&at, ctx, n, cmd, argc, out, next, sizeof host[0], &at.port, &asking, why, size);
        redisFree(ctx);
        if (rc != REDIRECTED) return rc;
        at.host = next;
    }
    snprintf(why, size, "redirected too many times");
    return -1;
}

long long cli_direct_whole(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_STRING) return -1;
    char *end;
    double d = strtod(r->str, &end);
    return end != r->str && !*end && d >= 0 && d < 9e18 ? (long long)d : -1;
}

long long cli_direct_time_ms(const redisReply *time)
{
    if (!time || time->type != REDIS_REPLY_ARRAY || time->elements != 2) return -1;
    long long s = cli_direct_whole(time->element[0]), us = cli_direct_whole(time->element[1]);
    return s < 0 || us < 0 ? -1 : s * 1000 + us / 1000;
}
