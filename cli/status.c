/* SPDX-License-Identifier: MIT */
/* redlease status: is RESOURCE held, by whom, for how much longer, and who
 * waits? It asks Redis itself with hiredis's synchronous API (a command
 * line tool needs no loop; and plain reads in MULTI/EXEC work where
 * scripts are denied, which redlease_inspect()'s script does not), for
 * the keys the library uses: redlease_key() names the lock, its fencing
 * counter, the holders and weights of a semaphore or of shared holders,
 * and the queue's order and entries (man 3 redlease, KEYS and KINDS). The
 * library's own reader (cli/view.h) reads the answers; cli/status_text.h
 * prints them as lines, cli/view.h as --json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "args.h"
#include "commands.h"
#include "exit_status.h"
#include "msg.h"
#include "direct.h"
#include "server.h"
#include "addr.h" /* the library's address parser */
#include "identity.h" /* holders' records, cleaned for display */
#include "status_text.h"
#include "view.h"

enum { OPT_SHOW_TOKEN = 1, OPT_JSON, OPT_QUIET, OPT_HELP };

static const cli_opt status_opts[] = {
    {"show-token", 0, 0, OPT_SHOW_TOKEN},
    {"json", 0, 0, OPT_JSON},
    {"quiet", 'q', 0, OPT_QUIET},
    {"help", 'h', 0, OPT_HELP},
    {NULL, 0, 0, 0},
};

/* The keys of RESOURCE that status reads; 0.1.0's is lock alone. */
typedef struct status_keys {
    char *lock, *fence, *holders, *weights, *queue, *waiters;
} status_keys;

typedef struct status_query {
    cli_server server;
    const char *resource;
    int show_token;
    int json;   /* --json: one object at the end (cli/view.h), no lines */
    int legacy; /* asking for redlease 0.1.0's keys (prefix + name) */
    /* 0.1.0's key holds a lease: this version's "free" is not printed,
     * that holder's line is, once (one answer, not "free" then "held") */
    int legacy_held;
    long long legacy_pttl;
    char legacy_token[33];
    /* what each server asked answered, read by the library's reader:
     * one, or a quorum's members' */
    redlease_inspection views[REDLEASE_MAX_QUORUM];
    int viewed[REDLEASE_MAX_QUORUM];
    int nview; /* the server being asked: views[nview] */
    /* --quorum: the server being asked ("HOST:PORT: " before its lines),
     * and the lease it holds, as rdl_inspect_most_held counts them: a
     * mutex's token, or another writer's value (owned), and its PTTL */
    const char *member;
    char *member_token;
    long long member_ms;
    /* --quorum: the servers' views tallied (rdl_inspect_tally) */
    redlease_inspection tally;
    int tallied;
} status_query;

/* Lines are printed (not --quiet, not --json). */
static int texts(const status_query *q) { return cli_verbosity >= CLI_NORMAL && !q->json; }

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
        case OPT_JSON: q->json = 1; break;
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
    if (cli_verbosity > CLI_QUIET && !q->legacy) /* 0.1.0's key unread: this version's answer stands */
        cli_error("Redis at %s: %s%s%s", q->server.where, what, what[0] ? ": " : "", why);
    return CLI_EXIT_UNAVAILABLE;
}

/* 32 lowercase hex digits: what every redlease version writes. */
static int is_token(const char *s, size_t len)
{
    if (len != 32) return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* What query() reads of a resource, at one instant; 0.1.0's key: the first
 * two. */
enum { R_PTTL = CLI_VIEW_PTTL, R_VALUE = CLI_VIEW_VALUE, R_FENCE = CLI_VIEW_FENCE, R_TIME = CLI_VIEW_TIME,
       R_HOLDERS = CLI_VIEW_HOLDERS, R_WEIGHTS = CLI_VIEW_WEIGHTS, R_QUEUE = CLI_VIEW_QUEUE,
       R_WAITERS = CLI_VIEW_WAITERS, R_COUNT = CLI_VIEW_READS };

static const char *string_of(const redisReply *r) { return r && r->type == REDIS_REPLY_STRING ? r->str : NULL; }

/* 0.1.0's lock key (got: its PTTL and value): a lease only when it holds
 * a token, its line printed unless --quiet. */
static int report_legacy(status_query *q, redisReply *const *got)
{
    status_raw raw = {got[R_PTTL]->integer, string_of(got[R_VALUE]), got[R_VALUE]->len, NULL};
    int held = raw.pttl != -2 && raw.value && is_token(raw.value, raw.value_len);
    if (held) {
        q->legacy_held = 1;
        q->legacy_pttl = raw.pttl;
        memcpy(q->legacy_token, raw.value, 32);
        q->legacy_token[32] = '\0';
    }
    return held ? CLI_EXIT_HELD : CLI_EXIT_FREE;
}

/* What the replies say, read by the library's reader (cli/view.h) and
 * kept for --json and the quorum's tally, printed unless --quiet or
 * --json: CLI_EXIT_HELD, CLI_EXIT_FREE, or a failure (said). */
static int report(status_query *q, const char *key, redisReply *const *got)
{
    redlease_inspection *v = &q->views[q->nview];
    unsigned mended;
    int st = cli_view_read(got, v, &mended), kind = redlease_inspection_kind(v);
    const char *bad = st == REDLEASE_EPROTO ? "the resource's keys hold unexpected values" : NULL;
    if (!st && (kind == REDLEASE_KIND_SEMAPHORE || kind == REDLEASE_KIND_SHARED) &&
        (mended & (1u << R_HOLDERS | 1u << R_WEIGHTS)))
        bad = kind == REDLEASE_KIND_SEMAPHORE ? "the semaphore's keys hold unexpected values"
                                              : "the shared holders' keys hold unexpected values";
    if (st || bad) {
        rdl_inspect_clear(v);
        if (!bad) cli_error("out of memory");
        return bad ? unavailable(q, "", bad) : CLI_EXIT_FAILED;
    }
    status_raw raw = {got[R_PTTL]->integer, string_of(got[R_VALUE]), got[R_VALUE]->len,
                      string_of(got[R_FENCE])};
    int held = status_text_held(v, &raw);
    if (q->member && held && (kind == REDLEASE_KIND_MUTEX || (kind == REDLEASE_KIND_UNKNOWN && raw.value))) {
        /* the lease this member holds, for query_quorum: a mutex's token,
           or another writer's value as it is */
        const redlease_holder *h = redlease_inspection_holder(v, 0);
        if (!(q->member_token = h ? strdup(h->token) : strndup(raw.value, raw.value_len))) {
            cli_error("out of memory");
            return CLI_EXIT_FAILED;
        }
        q->member_ms = h ? h->ttl_ms : raw.pttl;
    }
    if (mended) { /* a key of another type: what the others say, then that */
        if (texts(q)) status_text_server(q->member, key, v, &raw, q->show_token, 0);
        rdl_inspect_clear(v);
        return unavailable(q, "", "the resource's keys hold unexpected values");
    }
    q->viewed[q->nview] = 1;
    if (texts(q) && (held || !q->legacy_held)) status_text_server(q->member, key, v, &raw, q->show_token, 1);
    return held ? CLI_EXIT_HELD : CLI_EXIT_FREE;
}

/* The lock key's PTTL and value, the fence counter, the holders and
 * weights (a semaphore's, or shared holders') with the server's clock,
 * and the queue, read at one instant (cli_direct_run), from the first
 * node listed with --cluster, following its redirects: CLI_EXIT_HELD,
 * CLI_EXIT_FREE, or CLI_EXIT_UNAVAILABLE (said why). */
static int query(status_query *q, const status_keys *k)
{
    const char *const cmds[R_COUNT][CLI_DIRECT_ARGS] = {
        [R_PTTL] = {"PTTL", k->lock},
        [R_VALUE] = {"GET", k->lock},
        [R_FENCE] = {"GET", k->fence},
        [R_TIME] = {"TIME"},
        [R_HOLDERS] = {"ZRANGE", k->holders, "0", "-1", "WITHSCORES"},
        [R_WEIGHTS] = {"HGETALL", k->weights},
        [R_QUEUE] = {"ZRANGE", k->queue, "0", "-1"},
        [R_WAITERS] = {"HGETALL", k->waiters},
    };
    static const int argc[R_COUNT] = {2, 2, 2, 1, 5, 2, 4, 2};
    /* 0.1.0's lock key alone (its counter is in another slot), with its
       value: only a token makes it a lease */
    int n = q->legacy ? R_FENCE : R_COUNT;
    cli_direct_read rd;
    char why[400];
    if (cli_direct_run(&q->server, n, cmds, argc, &rd, why, sizeof why) != 0) return unavailable(q, "", why);
    int rc = rd.reply[R_PTTL]->type != REDIS_REPLY_INTEGER ? unavailable(q, "PTTL", "unexpected reply")
             : q->legacy                                   ? report_legacy(q, rd.reply)
                                                           : report(q, k->lock, rd.reply);
    cli_direct_read_free(&rd);
    return rc;
}

/* Asks about 0.1.0's key of the resource (prefix + name), saying
 * nothing: q->legacy_held when it holds a lease. 0 when out of memory. */
static int ask_legacy_key(status_query *q)
{
    size_t plen = strlen(q->server.prefix), rlen = strlen(q->resource);
    char *key = malloc(plen + rlen + 1);
    if (!key) {
        cli_error("out of memory");
        return 0;
    }
    memcpy(key, q->server.prefix, plen);
    memcpy(key + plen, q->resource, rlen + 1);
    status_keys k = {key, NULL, NULL, NULL, NULL, NULL};
    q->legacy = 1;
    query(q, &k);
    q->legacy = 0;
    free(key);
    return 1;
}

/* One server: this version's keys, and 0.1.0's key, which counts while
 * both versions run. One answer: this version's holders, else 0.1.0's
 * holder, else free. */
static int query_one(status_query *q, const status_keys *k)
{
    if (!ask_legacy_key(q)) return CLI_EXIT_FAILED;
    int rc = query(q, k);
    if (rc != CLI_EXIT_FREE || !q->legacy_held) return rc;
    if (texts(q)) {
        char key[REDLEASE_MAX_PREFIX + REDLEASE_MAX_RESOURCE + 1];
        snprintf(key, sizeof key, "%s%s", q->server.prefix, q->resource);
        status_raw raw = {q->legacy_pttl, q->legacy_token, 32, NULL};
        status_text_legacy(key, &raw, q->show_token);
    }
    return CLI_EXIT_HELD;
}

/* Asks each member of the quorum (--quorum) in turn: its lines printed,
 * one that does not answer named. Its view is kept in q->views, the lease
 * it holds in token[i] and ms[i]. How many did not answer; *failed when
 * one failed. */
static int ask_members(status_query *q, const status_keys *keys, const rdl_addr *m, int n, char **token,
                       int64_t *ms, int *failed)
{
    char name[REDLEASE_MAX_QUORUM][270];
    char where[sizeof q->server.where];
    const char *host = q->server.host;
    int port = q->server.port, unreachable = 0;
    memcpy(where, q->server.where, sizeof where);
    for (int i = 0; i < n; i++) {
        /* as the list writes it: an IPv6 address in brackets */
        snprintf(name[i], sizeof name[i], strchr(m[i].host, ':') ? "[%s]:%d" : "%s:%d",
                 m[i].host, m[i].port);
        q->server.host = m[i].host;
        q->server.port = m[i].port;
        snprintf(q->server.where, sizeof q->server.where, "%.280s", name[i]);
        q->member = name[i];
        q->nview = i;
        q->member_token = NULL;
        q->member_ms = 0;
        int rc = query(q, keys);
        token[i] = q->member_token;
        ms[i] = q->member_ms;
        if (rc == CLI_EXIT_FAILED) *failed = 1;
        if (rc == CLI_EXIT_UNAVAILABLE) {
            unreachable++;
            if (texts(q)) {
                printf("%s: %s: unavailable\n", name[i], keys->lock);
                fflush(stdout);
            }
        }
    }
    q->member = NULL;
    q->server.host = host;
    q->server.port = port;
    memcpy(q->server.where, where, sizeof where);
    return unreachable;
}

/* The lease that members hold with one token, in a quorum (--quorum):
 * held when a majority holds one token; free when no token can have a
 * majority, even counting the members that did not answer; else nobody
 * can tell (unavailable). A semaphore's holders, and shared ones: each
 * holds while a majority admits it (man 3 redlease, KINDS), by the
 * quorum's tally. CLI_EXIT_HELD, CLI_EXIT_FREE, CLI_EXIT_UNAVAILABLE or
 * CLI_EXIT_FAILED. */
static int query_quorum(status_query *q, const status_keys *keys)
{
    const char *key = keys->lock;
    rdl_addr m[REDLEASE_MAX_QUORUM];
    int n = rdl_addr_list_parse(q->server.quorum, m, REDLEASE_MAX_QUORUM);
    if (n < 2) { /* checked by cli_server_take: only out of memory */
        cli_error("out of memory");
        return CLI_EXIT_FAILED;
    }
    char *token[REDLEASE_MAX_QUORUM];
    int64_t ms[REDLEASE_MAX_QUORUM], left;
    int failed = 0, first, cannot_tell = 0;
    int unreachable = ask_members(q, keys, m, n, token, ms, &failed);
    rdl_addr_list_free(m, n);
    int need = n / 2 + 1, best = rdl_inspect_most_held((const char *const *)token, ms, n, &first, &left);
    redlease_inspection *views[REDLEASE_MAX_QUORUM];
    for (int i = 0; i < n; i++) views[i] = q->viewed[i] ? &q->views[i] : NULL;
    if (rdl_inspect_tally(&q->tally, views, n, &cannot_tell) != 0) {
        failed = 1;
        cli_error("out of memory");
    } else {
        q->tallied = 1;
        rdl_inspect_finish(&q->tally);
    }
    int rc = failed ? CLI_EXIT_FAILED
             : best >= need ? CLI_EXIT_HELD
             : best + unreachable < need ? CLI_EXIT_FREE
                                         : CLI_EXIT_UNAVAILABLE;
    int kind = redlease_inspection_kind(&q->tally);
    if (!failed && best < need && (kind == REDLEASE_KIND_SEMAPHORE || kind == REDLEASE_KIND_SHARED)) {
        /* none holds by those that answered: free only if those that did
           not could make no majority for anyone (a holder seen on too
           few, a lease's token, or one unseen) */
        rc = status_text_holding(&q->tally) ? CLI_EXIT_HELD
             : cannot_tell || best + unreachable >= need ? CLI_EXIT_UNAVAILABLE
                                                        : CLI_EXIT_FREE;
        if (rc == CLI_EXIT_UNAVAILABLE && cli_verbosity > CLI_QUIET)
            cli_error("Redis at %s: cannot tell: no holder of %s is admitted by %d of %d servers, "
                      "and %d do not answer", q->server.where, key, need, n, unreachable);
        else if (rc != CLI_EXIT_UNAVAILABLE && texts(q))
            status_text_quorum_set(key, &q->tally, need, q->show_token);
    } else if (rc == CLI_EXIT_HELD && texts(q)) {
        status_text_quorum_held(key, best, n, need, left, token[first], q->show_token);
    } else if (rc == CLI_EXIT_FREE && texts(q)) {
        status_text_quorum_free(key, best, n, unreachable, need);
    } else if (rc == CLI_EXIT_UNAVAILABLE && cli_verbosity > CLI_QUIET) {
        char also[64] = "";
        if (unreachable) snprintf(also, sizeof also, ", %d not answering", unreachable);
        cli_error("Redis at %s: cannot tell: %s is held by %d of %d servers%s, and a majority "
                  "is %d", q->server.where, key, best, n, also, need);
    }
    for (int i = 0; i < n; i++) free(token[i]);
    return rc;
}

/* --json: the one object (cli/view.h) of what the server, or the quorum's
 * servers by majority (their tally), answered; held as the exit status
 * says. */
static void print_json(const status_query *q, const char *key, int rc)
{
    int held = rc == CLI_EXIT_HELD ? 1 : rc == CLI_EXIT_FREE ? 0 : -1;
    const redlease_inspection *v = q->server.quorum ? (q->tallied ? &q->tally : NULL)
                                   : q->viewed[0]   ? &q->views[0]
                                                    : NULL;
    cli_view_print_json(stdout, q->resource, key, v, held, q->show_token);
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
    const cli_server *s = &q.server;
    status_keys k = {cli_direct_key(s, q.resource, REDLEASE_KEY_LOCK), cli_direct_key(s, q.resource, REDLEASE_KEY_FENCE),
                     cli_direct_key(s, q.resource, REDLEASE_KEY_HOLDERS),
                     cli_direct_key(s, q.resource, REDLEASE_KEY_WEIGHTS),
                     cli_direct_key(s, q.resource, REDLEASE_KEY_QUEUE),
                     cli_direct_key(s, q.resource, REDLEASE_KEY_WAITERS)};
    if (!k.lock || !k.fence || !k.holders || !k.weights || !k.queue || !k.waiters) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILED;
    } else {
        char why[400];
        rc = CLI_EXIT_UNAVAILABLE;
        if (cli_server_find_primary(&q.server, why, sizeof why) != 0) {
            unavailable(&q, "", why); /* no Sentinel named the primary */
        } else if (q.server.quorum) {
            /* no 0.1.0 keys: that version had no quorum */
            rc = query_quorum(&q, &k);
        } else {
            rc = query_one(&q, &k);
        }
        if (q.json && rc != CLI_EXIT_FAILED) print_json(&q, k.lock, rc);
    }
    for (int i = 0; i < REDLEASE_MAX_QUORUM; i++) rdl_inspect_clear(&q.views[i]);
    rdl_inspect_clear(&q.tally);
    free(k.lock);
    free(k.fence);
    free(k.holders);
    free(k.weights);
    free(k.queue);
    free(k.waiters);
    cli_server_free(&q.server);
    return rc;
}
