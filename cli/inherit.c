/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "direct.h"
#include "inherit.h"
#include "msg.h"
#include "addr.h" /* the library's address parser */

/* 32 lowercase hex digits: a token, as every redlease version writes it. */
static int is_token(const char *s)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return i == 32;
}

/* An environment variable that holds a whole number from 1 to max, as
 * child.c writes them: the number, 0 when unset, or -1. */
static int64_t env_number(const char *name, int64_t max)
{
    const char *v = getenv(name);
    if (!v) return 0;
    int64_t n = 0;
    for (size_t i = 0; v[i]; i++) {
        if (v[i] < '0' || v[i] > '9' || i >= 10) return -1;
        n = n * 10 + (v[i] - '0');
    }
    return n >= 1 && n <= max ? n : -1;
}

/* "a semaphore of N permits (weight K)", "shared", "exclusive". */
static const char *kind_text(int64_t limit, int64_t weight, int shared, char *buf, size_t size)
{
    if (shared) return "shared";
    if (!limit) return "exclusive (a mutex)";
    snprintf(buf, size, "a semaphore of %" PRId64 " permits, weight %" PRId64, limit, weight);
    return buf;
}

int cli_inherit_find(cli_inherit *in, const cli_server *s, const cli_inherit_ask *ask)
{
    memset(in, 0, sizeof *in);
    const char *key = getenv("REDLEASE_KEY"), *token = getenv("REDLEASE_TOKEN");
    if (!key || !token) return CLI_INHERIT_NONE;
    in->lock = cli_direct_key(s, ask->resource, REDLEASE_KEY_LOCK);
    in->holders = cli_direct_key(s, ask->resource, REDLEASE_KEY_HOLDERS);
    if (!in->lock || !in->holders) {
        cli_inherit_free(in);
        cli_error("out of memory");
        return CLI_INHERIT_FAILED;
    }
    const char *why = NULL;
    char outer[80], ours[80], text[200];
    int64_t limit = env_number("REDLEASE_LIMIT", REDLEASE_MAX_PERMITS);
    int64_t weight = env_number("REDLEASE_WEIGHT", REDLEASE_MAX_PERMITS);
    int64_t want = ask->weight ? ask->weight : 1;
    const char *shared_text = getenv("REDLEASE_SHARED");
    int shared = shared_text && strcmp(shared_text, "1") == 0;
    if (strcmp(key, in->lock) != 0) {
        /* another resource's lease (or another --prefix): not ours to join */
        snprintf(text, sizeof text, "it is the lease on %.120s", key);
        why = text;
    } else if (!is_token(token)) {
        why = "REDLEASE_TOKEN is not a token (32 hex digits)";
    } else if (limit < 0 || weight < 0 || (limit && !weight) || weight > limit || (shared && limit) ||
               (shared_text && !shared)) {
        why = "REDLEASE_LIMIT, REDLEASE_WEIGHT or REDLEASE_SHARED hold values redlease never sets";
    } else if (limit != ask->limit || shared != ask->shared || want > (limit ? weight : 1)) {
        /* a lease of another kind does not give what this run asks for */
        snprintf(text, sizeof text, "it is %s, this run asks for %s",
                 kind_text(limit, weight, shared, outer, sizeof outer),
                 kind_text(ask->limit, want, ask->shared, ours, sizeof ours));
        why = text;
    } else if (ask->fencing && !getenv("REDLEASE_FENCE")) {
        why = "it has no fencing token (REDLEASE_FENCE) and this run asks for --fence";
    }
    if (why) {
        cli_verbose("not joining the lease in the environment: %s", why);
        cli_inherit_free(in);
        return CLI_INHERIT_NONE;
    }
    memcpy(in->token, token, sizeof in->token);
    in->limit = limit;
    in->shared = shared;
    return CLI_INHERIT_OFFERED;
}

void cli_inherit_free(cli_inherit *in)
{
    free(in->lock);
    free(in->holders);
    in->lock = in->holders = NULL;
}

/* The lock key's value says the token holds it: a mutex's (an exclusive
 * holder's) is the token, or the token, a space and what follows (a
 * holder's record after it); a semaphore's or shared holders' is their
 * kind ("semaphore N", "shared"; man 3 redlease, KINDS). */
static int value_fits(const cli_inherit *in, const redisReply *v)
{
    if (v->type != REDIS_REPLY_STRING) return 0;
    char kind[32];
    if (in->limit || in->shared) {
        snprintf(kind, sizeof kind, in->shared ? "shared" : "semaphore %" PRId64, in->limit);
        return strlen(kind) == v->len && memcmp(kind, v->str, v->len) == 0;
    }
    return (v->len == 32 || (v->len > 32 && v->str[32] == ' ')) && memcmp(v->str, in->token, 32) == 0;
}

enum { I_VALUE, I_PTTL, I_TIME, I_SCORE, I_COUNT };

/* One server's answer: HOLDS (*left: ms, -1 no expiry), GONE, or UNSURE and why.
 * A semaphore's or a shared holder holds while its deadline (its score
 * among the holders, in the server's ms) is ahead of the server's TIME:
 * the scripts drop the holders past it only when they next run. */
static int holds_on(const cli_inherit *in, const cli_server *s, long long *left, char *why, size_t size)
{
    const char *const cmd[I_COUNT][CLI_DIRECT_ARGS] = {
        [I_VALUE] = {"GET", in->lock},
        [I_PTTL] = {"PTTL", in->lock},
        [I_TIME] = {"TIME"},
        [I_SCORE] = {"ZSCORE", in->holders, in->token},
    };
    static const int argc[I_COUNT] = {2, 2, 1, 3};
    cli_direct_read rd;
    if (cli_direct_run(s, I_COUNT, cmd, argc, &rd, why, size) != 0) return CLI_INHERIT_UNSURE;
    const redisReply *pttl = rd.reply[I_PTTL];
    long long now = cli_direct_time_ms(rd.reply[I_TIME]);
    long long deadline = cli_direct_whole(rd.reply[I_SCORE]);
    int rc = CLI_INHERIT_GONE;
    if (pttl->type != REDIS_REPLY_INTEGER || now < 0) {
        snprintf(why, size, "unexpected reply to PTTL or TIME");
        rc = CLI_INHERIT_UNSURE;
    } else if (!value_fits(in, rd.reply[I_VALUE]) || pttl->integer == -2) {
        rc = CLI_INHERIT_GONE;
    } else if (!in->limit && !in->shared) {
        *left = pttl->integer; /* -1: a key without expiry */
        rc = CLI_INHERIT_HOLDS;
    } else if (deadline > now) {
        *left = deadline - now;
        rc = CLI_INHERIT_HOLDS;
    }
    cli_direct_read_free(&rd);
    return rc;
}

static int by_longest(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x < y) - (x > y);
}

/* --quorum: the token holds while a majority of the servers has it, for
 * as long as the majority-th longest of their times left. */
static int check_quorum(const cli_inherit *in, const cli_server *s, int64_t *left_ms, char *why,
                        size_t size)
{
    rdl_addr m[REDLEASE_MAX_QUORUM];
    int n = rdl_addr_list_parse(s->quorum, m, REDLEASE_MAX_QUORUM);
    if (n < 2) { /* checked by cli_server_take: only out of memory */
        snprintf(why, size, "out of memory");
        return CLI_INHERIT_UNSURE;
    }
    int need = n / 2 + 1, yes = 0, no = 0;
    long long left[REDLEASE_MAX_QUORUM];
    char one[300] = "";
    cli_server at = *s; /* each server in turn; owns nothing */
    for (int i = 0; i < n; i++) {
        at.host = m[i].host;
        at.port = m[i].port;
        long long l = 0;
        char err[256];
        int rc = holds_on(in, &at, &l, err, sizeof err);
        if (rc == CLI_INHERIT_HOLDS)
            left[yes++] = l < 0 ? LLONG_MAX : l;
        else if (rc == CLI_INHERIT_GONE)
            no++;
        else
            snprintf(one, sizeof one, strchr(m[i].host, ':') ? "[%s]:%d: %s" : "%s:%d: %s", m[i].host,
                     m[i].port, err);
    }
    rdl_addr_list_free(m, n);
    if (yes >= need) {
        qsort(left, (size_t)yes, sizeof left[0], by_longest);
        *left_ms = left[need - 1] == LLONG_MAX ? -1 : left[need - 1];
        return CLI_INHERIT_HOLDS;
    }
    if (n - no < need) return CLI_INHERIT_GONE; /* not even with those that did not answer */
    snprintf(why, size, "%d of %d servers confirm it, a majority is %d; %s", yes, n, need, one);
    return CLI_INHERIT_UNSURE;
}

int cli_inherit_check(const cli_inherit *in, cli_server *s, int64_t *left_ms, char *why, size_t size)
{
    if (s->quorum) return check_quorum(in, s, left_ms, why, size);
    /* a failover may have moved the primary since the last check */
    if (cli_server_find_primary(s, why, size) != 0) return CLI_INHERIT_UNSURE;
    long long left = 0;
    int rc = holds_on(in, s, &left, why, size);
    if (rc == CLI_INHERIT_HOLDS) *left_ms = left;
    return rc;
}
