/* SPDX-License-Identifier: MIT */
/* What the files of test_inspect share: a builder of the inspect script's
 * answer (src/inspect_view.h reads it), a recorder of the inspect
 * callback, and the look of the command. Header-only, as core_rig.h. */
#ifndef REDLEASE_TEST_INSPECT_H
#define REDLEASE_TEST_INSPECT_H
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "inspect_view.h"
#include "testutil.h"

/* The answer [PTTL, GET lock, GET fence, TIME, holders, weights, queue,
 * waiters], its strings kept in it. */
typedef struct answer {
    rdl_reply top, part[8], time[2];
    rdl_reply holders[32], weights[32], queue[16], waiters[32];
    size_t nh, nw, nq, nwt;
    char text[96][160];
    int nt;
} answer;

static inline rdl_reply text_reply(const char *s)
{
    return (rdl_reply){.type = RDL_REPLY_STRING, .str = s, .len = strlen(s)};
}

/* A copy of the formatted text, kept in a. */
static inline const char *keep(answer *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *t = a->text[a->nt++];
    vsnprintf(t, sizeof a->text[0], fmt, ap);
    va_end(ap);
    return t;
}

/* A server whose clock says now (ms) answering: the lock key's PTTL and
 * value (NULL: none), the fence counter (NULL: none). */
static inline void answer_init(answer *a, int64_t now, long long pttl, const char *value,
                               const char *fence)
{
    memset(a, 0, sizeof *a);
    a->part[0] = (rdl_reply){.type = RDL_REPLY_INTEGER, .integer = pttl};
    a->part[1] = value ? text_reply(keep(a, "%s", value)) : (rdl_reply){.type = RDL_REPLY_NIL};
    a->part[2] = fence ? text_reply(keep(a, "%s", fence)) : (rdl_reply){.type = RDL_REPLY_NIL};
    a->time[0] = text_reply(keep(a, "%lld", (long long)(now / 1000)));
    a->time[1] = text_reply(keep(a, "%lld", (long long)(now % 1000 * 1000 + 250)));
}

static inline void answer_holder(answer *a, const char *token, int64_t deadline)
{
    a->holders[a->nh++] = text_reply(keep(a, "%s", token));
    a->holders[a->nh++] = text_reply(keep(a, "%lld", (long long)deadline));
}

static inline void answer_field(rdl_reply *hash, size_t *n, answer *a, const char *field, const char *value)
{
    hash[(*n)++] = text_reply(keep(a, "%s", field));
    hash[(*n)++] = text_reply(keep(a, "%s", value));
}

static inline void answer_weight(answer *a, const char *field, const char *value)
{
    answer_field(a->weights, &a->nw, a, field, value);
}

static inline void answer_waiter(answer *a, const char *field, const char *value)
{
    answer_field(a->waiters, &a->nwt, a, field, value);
}

static inline void answer_queue(answer *a, const char *token)
{
    a->queue[a->nq++] = text_reply(keep(a, "%s", token));
}

static inline const rdl_reply *answer_done(answer *a)
{
    a->part[3] = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = 2, .element = a->time};
    a->part[4] = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = a->nh, .element = a->holders};
    a->part[5] = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = a->nw, .element = a->weights};
    a->part[6] = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = a->nq, .element = a->queue};
    a->part[7] = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = a->nwt, .element = a->waiters};
    a->top = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = 8, .element = a->part};
    return &a->top;
}

/* The oldest command answered: the resource is free; the timer runs. */
static inline void reply_free(fake *f)
{
    answer a;
    answer_init(&a, FAKE_SERVER_CLOCK_MS + f->now, -2, NULL, NULL);
    fake_reply(f, answer_done(&a));
    fake_run(f);
}

/* Tokens of the cases: 32 hex digits each. */
#define TOK_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define TOK_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define TOK_C "cccccccccccccccccccccccccccccccc"
#define TOK_D "dddddddddddddddddddddddddddddddd"

/* The fake server's clock now. */
static inline int64_t server_now(const fake *f) { return FAKE_SERVER_CLOCK_MS + f->now; }

/* ------------------------------------------------------ the callback */

typedef struct seen_inspection {
    int calls, status;
    int inside;            /* >0 while the call that started it runs */
    int kind, limit;
    size_t holders, waiters;
    int servers, answered;
    redlease_holder holder[4];
    redlease_waiter waiter[4];
    char token[4][RDL_INSPECT_TOKEN_MAX + 1];
    fake *f;
    int free_client;       /* frees the client from the callback */
    int again;             /* what redlease_inspect() returned from the callback */
    int inspect_again;     /* calls redlease_inspect() from the callback */
} seen_inspection;

static inline void on_inspect(const redlease_inspection *in, int status, void *arg)
{
    seen_inspection *s = arg;
    CHECK_EQ(s->inside, 0); /* never inside the call that started it */
    s->calls++;
    s->status = status;
    if (in) {
        s->kind = redlease_inspection_kind(in);
        s->limit = redlease_inspection_limit(in);
        s->holders = redlease_inspection_holder_count(in);
        s->waiters = redlease_inspection_waiter_count(in);
        s->servers = redlease_inspection_servers(in);
        s->answered = redlease_inspection_answered(in);
        for (size_t i = 0; i < s->holders && i < 4; i++) {
            s->holder[i] = *redlease_inspection_holder(in, i);
            snprintf(s->token[i], sizeof s->token[i], "%s", s->holder[i].token);
        }
        for (size_t i = 0; i < s->waiters && i < 4; i++) s->waiter[i] = *redlease_inspection_waiter(in, i);
    }
    if (s->inspect_again) s->again = redlease_inspect(s->f->c, "job", 3, on_inspect, s);
    if (s->free_client) {
        redlease_client_free(s->f->c);
        s->f->c = NULL;
    }
}

/* Starts an inspection of res on f's client, recorded in s. */
static inline int inspect(fake *f, seen_inspection *s, const char *res)
{
    s->f = f;
    s->inside++;
    int rc = redlease_inspect(f->c, res, strlen(res), on_inspect, s);
    s->inside--;
    return rc;
}

/* The command the inspection sends: the script by its SHA-1 (or EVAL),
 * with the six keys of res under "lock:". */
static inline int is_inspect_cmd(const fake_cmd *c, const char *res, int eval)
{
    char key[80];
    snprintf(key, sizeof key, "lock:{%s}", res);
    return c && c->argc == 9 &&
           strcmp(c->argv[0], eval ? "EVAL" : "EVALSHA") == 0 &&
           strcmp(c->argv[1], eval ? rdl_script_src[RDL_SCRIPT_INSPECT] : fake_sha(RDL_SCRIPT_INSPECT)) == 0 &&
           strcmp(c->argv[2], "6") == 0 && strcmp(c->argv[3], key) == 0 &&
           strncmp(c->argv[4], key, strlen(key)) == 0 && strcmp(c->argv[4] + strlen(key), ":fence") == 0 &&
           strcmp(c->argv[5] + strlen(key), ":holders") == 0 && strcmp(c->argv[6] + strlen(key), ":weights") == 0 &&
           strcmp(c->argv[7] + strlen(key), ":queue") == 0 && strcmp(c->argv[8] + strlen(key), ":waiters") == 0;
}

/* test_inspect_topo.c */
void test_inspect_cluster_moved(void);
void test_inspect_cluster_ask_to_a_new_node(void);
void test_inspect_quorum_mutex(void);
void test_inspect_quorum_cannot_tell(void);
void test_inspect_quorum_semaphore(void);
void test_inspect_quorum_none_answers(void);
void test_inspect_tally_rules(void);

#endif
