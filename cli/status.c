/* SPDX-License-Identifier: MIT */
/* redlease status: is RESOURCE held, by whom, for how much longer, and who
 * waits? It asks Redis itself with hiredis's synchronous API (a command
 * line tool needs no loop; and plain reads in MULTI/EXEC work where
 * scripts are denied, which redlease_inspect()'s script does not), for
 * the keys the library uses: redlease_key() names the lock, its fencing
 * counter, the holders and weights of a semaphore or of shared holders,
 * and the queue's order and entries (man 3 redlease, KEYS and KINDS). The
 * library's own reader (cli/view.h) reads the answers for the waiters'
 * lines and --json. */
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
#include "view.h"

enum { OPT_SHOW_TOKEN = 1, OPT_JSON, OPT_QUIET, OPT_HELP };

static const cli_opt status_opts[] = {
    {"show-token", 0, 0, OPT_SHOW_TOKEN},
    {"json", 0, 0, OPT_JSON},
    {"quiet", 'q', 0, OPT_QUIET},
    {"help", 'h', 0, OPT_HELP},
    {NULL, 0, 0, 0},
};

/* --quorum: a holder of a semaphore or of shared holders, and how many
 * servers admit it now (it holds while a majority does). */
typedef struct member_holder {
    char token[40];
    int servers;
    long long permits;                   /* its weight (1: shared) */
    long long left[REDLEASE_MAX_QUORUM]; /* ms left on each server that admits it */
} member_holder;

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
    /* what each server asked answered, read by the library's reader
     * (the waiters' lines, --json): one, or a quorum's members' */
    redlease_inspection views[REDLEASE_MAX_QUORUM];
    int viewed[REDLEASE_MAX_QUORUM];
    int nview; /* the server being asked: views[nview] */
    /* --quorum: the server being asked ("HOST:PORT: " before its lines),
     * and what it answered: the key's PTTL and value (owned), or that it
     * holds a set of holders (which no quorum lease is): a kind */
    const char *member;
    long long member_ms;
    char *member_token;
    size_t member_token_len;
    int member_kind;
    /* and the holders of a set each server admits, tallied over them */
    member_holder *holders;
    size_t nholders;
    long long limit; /* the semaphore's, as a server says (0: shared) */
} status_query;

/* Lines are printed (not --quiet, not --json). */
static int texts(const status_query *q) { return cli_verbosity >= CLI_NORMAL && !q->json; }

/* The kinds of resource whose holders are a set (member_kind): none is 0. */
enum { KIND_SEMAPHORE = 1, KIND_SHARED, KIND_COUNT };

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
    if (cli_verbosity > CLI_QUIET)
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

/* Starts an output line: the server's address with --quorum, the key. */
static void line_start(const status_query *q, const char *key)
{
    if (q->member) printf("%s: ", q->member);
    printf("%s: ", key);
}

/* N when v is a semaphore's kind, "semaphore N" (man 3 redlease, KINDS),
 * else 0: a token, or a kind this version does not know. */
static long long semaphore_limit(const redisReply *v)
{
    static const char kind[] = "semaphore ";
    size_t k = sizeof kind - 1;
    if (!v || v->type != REDIS_REPLY_STRING || v->len <= k || v->len > k + 10 ||
        memcmp(v->str, kind, k) != 0)
        return 0;
    long long n = 0;
    for (size_t i = k; i < v->len; i++) {
        if (v->str[i] < '0' || v->str[i] > '9') return 0;
        n = n * 10 + (v->str[i] - '0');
    }
    return n;
}

/* A field of the holders' weights hash (a holder's token, or "used") and its
 * value, the holder's weight. */
typedef struct weight {
    const redisReply *token, *value;
} weight;

static int by_token(const void *a, const void *b)
{
    const redisReply *x = ((const weight *)a)->token, *y = ((const weight *)b)->token;
    int c = memcmp(x->str, y->str, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Ends a line with who a record (src/identity.h) says holds, "; by LABEL
 * (pid PID on HOST, for N ms, fence F)", cleaned for display again (anyone
 * may write a key); nothing for what is no record. */
static void print_record(const char *rec, size_t len, long long now)
{
    rdl_record r;
    if (rdl_identity_parse(rec, len, &r)) return;
    printf("; by %s (pid %lld on %s", r.label, (long long)r.pid, r.host);
    int64_t held = rdl_identity_age(now, r.at);
    if (held >= 0) printf(", for %lld ms", (long long)held);
    if (r.fence) printf(", fence %llu", (unsigned long long)r.fence);
    printf(")");
}

/* A holder's record in the weights hash, the field "#TOKEN" (w sorted by
 * by_token), or NULL. */
static const redisReply *record_of(const weight *w, size_t nw, const redisReply *token)
{
    char field[64];
    if (token->type != REDIS_REPLY_STRING || token->len + 2 > sizeof field) return NULL;
    field[0] = '#';
    memcpy(field + 1, token->str, token->len);
    redisReply key = {.type = REDIS_REPLY_STRING, .str = field, .len = token->len + 1};
    weight probe = {&key, NULL};
    const weight *found = bsearch(&probe, w, nw, sizeof *w, by_token);
    return found && found->value->type == REDIS_REPLY_STRING ? found->value : NULL;
}

/* One more server admits the holder token (its permits, ms left there):
 * 0, or -1 out of memory. Tokens are a holder's 32 hex digits; anything
 * longer is no holder of ours and is not tallied. */
static int tally(status_query *q, const redisReply *token, long long permits, long long left)
{
    if (token->type != REDIS_REPLY_STRING || token->len >= sizeof q->holders[0].token) return 0;
    for (size_t i = 0; i < q->nholders; i++) {
        member_holder *h = &q->holders[i];
        if (strlen(h->token) != token->len || memcmp(h->token, token->str, token->len) != 0) continue;
        if (h->servers < REDLEASE_MAX_QUORUM) h->left[h->servers++] = left;
        return 0;
    }
    member_holder *more = realloc(q->holders, (q->nholders + 1) * sizeof *more);
    if (!more) return -1;
    q->holders = more;
    member_holder *h = &q->holders[q->nholders++];
    memcpy(h->token, token->str, token->len + 1);
    h->servers = 1;
    h->permits = permits;
    h->left[0] = left;
    return 0;
}

/* A set of holders: a semaphore's of limit permits, or shared holders'
 * (limit 0). The holders (token -> deadline in the server's clock,
 * soonest first) and their weights, read with the server's TIME. The
 * holders past their deadline, which the next script drops, are neither
 * counted nor shown. A semaphore's holder holds its weight (one that is
 * missing counts 0, as the scripts count it); a shared holder is one
 * holder (its weight, 1, is not read). A holder's fence is kept nowhere
 * in Redis: the resource's counter (the last one minted) is shown, as for
 * a mutex. CLI_EXIT_HELD when a live holder holds, CLI_EXIT_FREE, or a
 * failure (said). */
static int show_holders(status_query *q, const char *key, long long limit,
                        redisReply *const *got)
{
    const redisReply *time = got[R_TIME], *holders = got[R_HOLDERS], *hash = got[R_WEIGHTS];
    const redisReply *counter = got[R_FENCE];
    /* ms, as the scripts' clock() reads TIME */
    long long now = cli_direct_time_ms(time);
    if (now < 0 || holders->type != REDIS_REPLY_ARRAY ||
        holders->elements % 2 || hash->type != REDIS_REPLY_ARRAY || hash->elements % 2)
        return unavailable(q, "", limit ? "the semaphore's keys hold unexpected values"
                                        : "the shared holders' keys hold unexpected values");
    size_t nw = hash->elements / 2, nh = holders->elements / 2;
    weight *w = malloc((nw ? nw : 1) * sizeof *w);
    long long *of = malloc((nh ? nh : 1) * sizeof *of); /* each holder's weight, 0: past */
    if (!w || !of) {
        free(w);
        free(of);
        cli_error("out of memory");
        return CLI_EXIT_FAILED;
    }
    for (size_t i = 0; i < nw; i++) w[i] = (weight){hash->element[2 * i], hash->element[2 * i + 1]};
    qsort(w, nw, sizeof *w, by_token);
    long long held = 0; /* permits, or shared holders */
    for (size_t i = 0; i < nh; i++) {
        long long permits = 1; /* a shared holder */
        if (limit) {
            weight token = {holders->element[2 * i], NULL};
            const weight *found = bsearch(&token, w, nw, sizeof *w, by_token);
            permits = found && cli_direct_whole(found->value) > 0 ? cli_direct_whole(found->value) : 0;
        }
        of[i] = cli_direct_whole(holders->element[2 * i + 1]) > now ? permits : 0;
        held += of[i];
    }
    for (size_t i = 0; i < nh && q->member; i++)
        if (of[i] && tally(q, holders->element[2 * i], of[i], cli_direct_whole(holders->element[2 * i + 1]) - now)) {
            free(w);
            free(of);
            cli_error("out of memory");
            return CLI_EXIT_FAILED;
        }
    if (q->member && limit) q->limit = limit;
    if (texts(q)) {
        line_start(q, key);
        if (limit)
            printf("semaphore: %lld of %lld permits held", held, limit);
        else
            printf("shared: %lld holder%s", held, held == 1 ? "" : "s");
        if (counter->type == REDIS_REPLY_STRING) printf(", fence counter %s", counter->str);
        printf("\n");
        for (size_t i = 0; i < nh; i++) {
            if (!of[i]) continue;
            line_start(q, key);
            if (limit)
                printf("holder: %lld permit%s, ", of[i], of[i] == 1 ? "" : "s");
            else
                printf("holder: shared, ");
            printf("%lld ms left", cli_direct_whole(holders->element[2 * i + 1]) - now);
            if (q->show_token) printf(", token %s", holders->element[2 * i]->str);
            const redisReply *rec = record_of(w, nw, holders->element[2 * i]);
            if (rec) print_record(rec->str, rec->len, now);
            printf("\n");
        }
        fflush(stdout);
    }
    free(w);
    free(of);
    return held ? CLI_EXIT_HELD : CLI_EXIT_FREE;
}

/* 1 when v is the kind of shared holders, "shared" (man 3 redlease, KINDS). */
static int is_shared(const redisReply *v)
{
    return v && v->type == REDIS_REPLY_STRING && v->len == 6 && memcmp(v->str, "shared", 6) == 0;
}

/* What the replies say (got: in the order of query()'s cmds), printed
 * unless --quiet: CLI_EXIT_HELD, CLI_EXIT_FREE, or a failure (said). */
static int report(status_query *q, const char *key, redisReply *const *got)
{
    const redisReply *value = got[R_VALUE];
    long long limit = q->legacy ? 0 : semaphore_limit(value);
    if (limit || (!q->legacy && is_shared(value))) {
        q->member_kind = limit ? KIND_SEMAPHORE : KIND_SHARED; /* for query_quorum */
        return show_holders(q, key, limit, got);
    }
    long long ms = got[R_PTTL]->integer;
    const redisReply *counter = q->legacy ? NULL : got[R_FENCE];
    const char *token = value->type == REDIS_REPLY_STRING ? value->str : NULL;
    int held = ms != -2; /* -2: no such key; -1: a key without expiry */
    /* 0.1.0's keys are no hash tags of ours: only a token makes it a lease */
    if (q->legacy) held = held && token && is_token(token, value->len);
    /* this version's holders write "TOKEN RECORD" (src/identity.h): the
     * token is what owns (a quorum's members each write their own fence
     * in the record), the record is shown */
    size_t toklen = token && value->len > 33 && token[32] == ' ' && is_token(token, 32) ? 32
                    : token                                                          ? value->len
                                                                                     : 0;
    if (q->member && held && token) {
        free(q->member_token);
        q->member_token_len = toklen;
        if (!(q->member_token = malloc(toklen + 1))) {
            cli_error("out of memory");
            return CLI_EXIT_FAILED;
        }
        memcpy(q->member_token, token, toklen);
        q->member_token[toklen] = '\0';
        q->member_ms = ms;
    }
    if (texts(q) && (held || !q->legacy)) {
        line_start(q, key);
        if (!held)
            printf("free");
        else if (ms == -1)
            printf("held, no expiry");
        else
            printf("held, %lld ms left", ms);
        long long now = q->legacy ? -1 : cli_direct_time_ms(got[R_TIME]);
        if (q->show_token && token) printf(", token %.*s", (int)toklen, token);
        if (counter && counter->type == REDIS_REPLY_STRING) printf(", fence counter %s", counter->str);
        if (q->legacy) printf(" (the key of redlease 0.1.0: a holder of that version)");
        if (held && value->type == REDIS_REPLY_STRING && toklen == 32 && value->len > 33 && now >= 0)
            print_record(token + 33, value->len - 33, now);
        printf("\n");
        fflush(stdout);
    }
    return held ? CLI_EXIT_HELD : CLI_EXIT_FREE;
}

/* The same replies read by the library's reader (cli/view.h), kept for
 * --json and the quorum's tally, and the waiters' lines printed: rc, or
 * CLI_EXIT_UNAVAILABLE (said why). */
static int view(status_query *q, const char *key, redisReply *const *got, int rc)
{
    redlease_inspection *v = &q->views[q->nview];
    int st = cli_view_read(got, v);
    if (st) {
        rdl_inspect_clear(v);
        return st == REDLEASE_ENOMEM ? (cli_error("out of memory"), CLI_EXIT_FAILED)
                                     : unavailable(q, "", "the resource's keys hold unexpected values");
    }
    q->viewed[q->nview] = 1;
    if (texts(q)) {
        char prefix[600];
        snprintf(prefix, sizeof prefix, "%s%s%.500s: ", q->member ? q->member : "", q->member ? ": " : "", key);
        cli_view_print_waiters(prefix, v, q->show_token);
        fflush(stdout);
    }
    return rc;
}

/* The lock key's PTTL and value, the fence counter, and the holders and
 * weights (a semaphore's, or shared holders') with the server's clock, read
 * at one instant (cli_direct_run), from the first node listed with
 * --cluster, following its redirects: CLI_EXIT_HELD, CLI_EXIT_FREE, or
 * CLI_EXIT_UNAVAILABLE (said why). */
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
                                                          : report(q, k->lock, rd.reply);
    if (!q->legacy && (rc == CLI_EXIT_HELD || rc == CLI_EXIT_FREE)) rc = view(q, k->lock, rd.reply, rc);
    cli_direct_read_free(&rd);
    return rc;
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
    status_keys k = {key, NULL, NULL, NULL, NULL, NULL};
    q->legacy = 1;
    if (query(q, &k) == CLI_EXIT_HELD) *rc = CLI_EXIT_HELD;
    q->legacy = 0;
    free(key);
    return 1;
}

/* The lease that members hold with one token, in a quorum (--quorum).
 * Each member is asked in turn (its line printed, an unreachable one
 * named), then: held when a majority holds one token; free when no token
 * can have a majority, even counting the members that did not answer;
 * else nobody can tell (unavailable). CLI_EXIT_HELD, CLI_EXIT_FREE,
 * CLI_EXIT_UNAVAILABLE or CLI_EXIT_FAILED. */
static int by_left(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x < y) - (x > y); /* longest first */
}

/* The quorum's holders of a set of the kind found (the servers' holders
 * tallied in q): those a majority admits, each for as long as the
 * need-th longest of its servers' times left. CLI_EXIT_HELD when one
 * holds, CLI_EXIT_FREE when none does and none could (too few servers not
 * answering), else CLI_EXIT_UNAVAILABLE. */
static int quorum_holders(status_query *q, const char *key, int kind, int n, int need, int unreachable,
                          int best)
{
    long long permits = 0, holders = 0;
    int could = 0; /* a holder that servers not answering could make a majority's */
    for (size_t i = 0; i < q->nholders; i++) {
        member_holder *h = &q->holders[i];
        if (h->servers >= need) {
            holders++;
            permits += kind == KIND_SEMAPHORE ? h->permits : 1;
        } else if (h->servers + unreachable >= need) {
            could = 1;
        }
    }
    /* none holds by those that answered: free only if those that did not
     * could make no majority for anyone (a holder seen on too few, a
     * mutex's token, or one unseen) */
    could = could || unreachable >= need || best + unreachable >= need;
    int rc = holders ? CLI_EXIT_HELD : could ? CLI_EXIT_UNAVAILABLE : CLI_EXIT_FREE;
    if (rc == CLI_EXIT_UNAVAILABLE) {
        if (cli_verbosity > CLI_QUIET)
            cli_error("Redis at %s: cannot tell: no holder of %s is admitted by %d of %d servers, "
                      "and %d do not answer", q->server.where, key, need, n, unreachable);
        return rc;
    }
    if (!texts(q)) return rc;
    int capacity = q->limit > 0 && q->limit <= REDLEASE_MAX_PERMITS
                       ? redlease_semaphore_capacity((int)q->limit, n)
                       : REDLEASE_EINVAL; /* no server's limit read, or out of range */
    if (kind == KIND_SEMAPHORE && capacity > 0)
        printf("%s: semaphore: %lld of %lld permits held by a majority (%d of %d servers; each "
               "admits %d)\n", key, permits, q->limit, need, n, capacity);
    else if (kind == KIND_SEMAPHORE)
        printf("%s: semaphore: %lld permits held by a majority (%d of %d servers)\n", key, permits,
               need, n);
    else
        printf("%s: shared: %lld holder%s by a majority (%d of %d servers)\n", key, holders,
               holders == 1 ? "" : "s", need, n);
    for (size_t i = 0; i < q->nholders; i++) {
        member_holder *h = &q->holders[i];
        if (h->servers < need) continue;
        qsort(h->left, (size_t)h->servers, sizeof h->left[0], by_left);
        printf("%s: holder: ", key);
        if (kind == KIND_SEMAPHORE)
            printf("%lld permit%s, ", h->permits, h->permits == 1 ? "" : "s");
        else
            printf("shared, ");
        printf("on %d of %d servers, %lld ms left", h->servers, n, h->left[need - 1]);
        if (q->show_token) printf(", token %s", h->token);
        printf("\n");
    }
    fflush(stdout);
    return rc;
}

static int query_quorum(status_query *q, const status_keys *keys)
{
    const char *key = keys->lock;
    rdl_addr m[REDLEASE_MAX_QUORUM];
    int n = rdl_addr_list_parse(q->server.quorum, m, REDLEASE_MAX_QUORUM);
    if (n < 2) { /* checked by cli_server_take: only out of memory */
        cli_error("out of memory");
        return CLI_EXIT_FAILED;
    }
    int need = n / 2 + 1, unreachable = 0, best = 0, best_i = -1, failed = 0;
    int kinds[KIND_COUNT] = {0}; /* how many members hold a set of holders, by kind */
    char *token[REDLEASE_MAX_QUORUM];
    size_t token_len[REDLEASE_MAX_QUORUM];
    long long ms[REDLEASE_MAX_QUORUM];
    char name[REDLEASE_MAX_QUORUM][270];
    char where[sizeof q->server.where];
    const char *host = q->server.host;
    int port = q->server.port;
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
        q->member_token_len = 0;
        q->member_ms = 0;
        q->member_kind = 0;
        int rc = query(q, keys);
        kinds[q->member_kind]++;
        token[i] = q->member_token;
        token_len[i] = q->member_token_len;
        ms[i] = q->member_ms;
        q->member_token = NULL;
        if (rc == CLI_EXIT_FAILED) failed = 1;
        if (rc == CLI_EXIT_UNAVAILABLE) {
            unreachable++;
            if (texts(q)) {
                printf("%s: %s: unavailable\n", name[i], key);
                fflush(stdout);
            }
        }
    }
    q->member = NULL;
    q->server.host = host;
    q->server.port = port;
    memcpy(q->server.where, where, sizeof where);
    /* the token most members hold; its lease lasts while a majority has it */
    long long left = -1;
    for (int i = 0; i < n; i++) {
        if (!token[i]) continue;
        int same = 0;
        for (int j = 0; j < n; j++)
            same += token[j] && token_len[j] == token_len[i] &&
                    memcmp(token[j], token[i], token_len[i]) == 0;
        if (same > best) best = same, best_i = i;
    }
    if (best >= need) { /* the need-th longest PTTL of the holders (-1: no expiry) */
        long long t[REDLEASE_MAX_QUORUM];
        int k = 0;
        for (int j = 0; j < n; j++)
            if (token[j] && token_len[j] == token_len[best_i] &&
                memcmp(token[j], token[best_i], token_len[best_i]) == 0)
                t[k++] = ms[j] < 0 ? (long long)1 << 62 : ms[j];
        for (int a = 0; a < k; a++) /* sort, longest first */
            for (int b = a + 1; b < k; b++)
                if (t[b] > t[a]) { long long x = t[a]; t[a] = t[b]; t[b] = x; }
        left = t[need - 1] == (long long)1 << 62 ? -1 : t[need - 1];
    }
    int rc = failed ? CLI_EXIT_FAILED
             : best >= need ? CLI_EXIT_HELD
             : best + unreachable < need ? CLI_EXIT_FREE
                                         : CLI_EXIT_UNAVAILABLE;
    char also[64] = "";
    if (unreachable)
        snprintf(also, sizeof also, ", %d not answering", unreachable);
    /* A semaphore's holders, and shared ones: each holds while a
     * majority admits it (man 3 redlease, KINDS). */
    if (!failed && best < need && (kinds[KIND_SEMAPHORE] || kinds[KIND_SHARED]))
        rc = quorum_holders(q, key, kinds[KIND_SEMAPHORE] ? KIND_SEMAPHORE : KIND_SHARED, n, need, unreachable,
                            best);
    else if (rc == CLI_EXIT_HELD && texts(q)) {
        printf("%s: held by %d of %d servers (a majority is %d)", key, best, n, need);
        if (left < 0)
            printf(", no expiry");
        else
            printf(", %lld ms left", left);
        if (q->show_token) printf(", token %s", token[best_i]);
        printf("\n");
    } else if (rc == CLI_EXIT_FREE && texts(q)) {
        printf("%s: free (held by %d of %d servers%s; a majority is %d)\n", key, best, n, also,
               need);
    } else if (rc == CLI_EXIT_UNAVAILABLE && cli_verbosity > CLI_QUIET) {
        cli_error("Redis at %s: cannot tell: %s is held by %d of %d servers%s, and a majority "
                  "is %d", q->server.where, key, best, n, also, need);
    }
    if (texts(q)) fflush(stdout);
    for (int i = 0; i < n; i++) free(token[i]);
    free(q->holders);
    q->holders = NULL;
    q->nholders = 0;
    rdl_addr_list_free(m, n);
    return rc;
}

/* --json: the one object (cli/view.h) of what the server, or the quorum's
 * servers by majority, answered; held as the exit status says. rc, or
 * CLI_EXIT_FAILED out of memory. */
static int print_json(status_query *q, const char *key, int rc)
{
    int held = rc == CLI_EXIT_HELD ? 1 : rc == CLI_EXIT_FREE ? 0 : -1;
    if (!q->server.quorum) {
        cli_view_print_json(stdout, q->resource, key, q->viewed[0] ? &q->views[0] : NULL, held, q->show_token);
        return rc;
    }
    rdl_addr m[REDLEASE_MAX_QUORUM];
    int n = rdl_addr_list_parse(q->server.quorum, m, REDLEASE_MAX_QUORUM);
    if (n > 0) rdl_addr_list_free(m, n);
    redlease_inspection *views[REDLEASE_MAX_QUORUM], tally;
    for (int i = 0; i < n; i++) views[i] = q->viewed[i] ? &q->views[i] : NULL;
    int cannot_tell = 0;
    if (n < 2 || rdl_inspect_tally(&tally, views, n, &cannot_tell) != 0) {
        cli_error("out of memory");
        return CLI_EXIT_FAILED;
    }
    rdl_inspect_finish(&tally);
    cli_view_print_json(stdout, q->resource, key, &tally, held, q->show_token);
    rdl_inspect_clear(&tally);
    return rc;
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
            rc = query(&q, &k);
            /* Free by this version's keys: a holder of 0.1.0 (keys prefix +
             * name, no braces) still counts, while both versions run. */
            if (rc == CLI_EXIT_FREE && !rc_legacy_keys(&q, &rc)) rc = CLI_EXIT_FAILED;
        }
        if (q.json && rc != CLI_EXIT_FAILED) rc = print_json(&q, k.lock, rc);
    }
    for (int i = 0; i < REDLEASE_MAX_QUORUM; i++) rdl_inspect_clear(&q.views[i]);
    free(k.lock);
    free(k.fence);
    free(k.holders);
    free(k.weights);
    free(k.queue);
    free(k.waiters);
    cli_server_free(&q.server);
    return rc;
}
