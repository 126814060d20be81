/* SPDX-License-Identifier: MIT */
/* The unit-test rig: a scripted transport, a fake loop timer and a virtual
 * clock, so every timing path of the core runs deterministically. Commands
 * are answered in order, as Redis does. */
#ifndef REDLEASE_FAKE_H
#define REDLEASE_FAKE_H
#include <stdint.h>

#include "client.h"
#include "redlease.h"

#define FAKE_MAX_CMDS 8192

typedef struct fake_cmd {
    int argc;
    char **argv; /* argc strings, each allocated (a fake lives on the stack:
                    thousands of commands, so nothing of their size inline) */
    void *req;
    int answered;
    int subscribed;  /* a SUBSCRIBE: answered by pushes, ended by the link */
    int64_t sent_at; /* virtual time of the submit */
} fake_cmd;

/* Links beside the client's own to Redis: the first such connection (a
 * Sentinel's, a Cluster seed's) gets the side link, the next ones (Cluster
 * nodes) the peers, in order. Their commands are answered in order; a
 * subscription stays open until the link goes. */
#define FAKE_SIDE_CMDS 256
#define FAKE_PEERS 5
typedef struct fake_side {
    struct rdl_conn *cn; /* the connection it serves */
    int connects, connecting, connected;
    char host[64];       /* where the last connect went */
    int port;
    fake_cmd cmds[FAKE_SIDE_CMDS];
    int ncmds, head;
    long uptime_s;       /* INFO server's uptime_in_seconds (a quorum member's
                            handshake asks): 0 a day; < 0 INFO is refused */
    const char *scripts_refused; /* the handshake's EVAL of "return 1" is
                                    answered this error; NULL: 1 */
} fake_side;

typedef struct fake {
    redlease_client *c;
    redlease_client *tc; /* the client the transport reports to */
    int64_t now;      /* virtual clock, ms */
    long clock_reads; /* times the client read it */
    int64_t timer_at; /* absolute deadline of the loop timer, or -1 */
    int64_t last_after; /* the last after_ms the core asked for */
    int timer_sets;
    int connects;     /* connect() calls */
    int connect_rc;   /* what the next connect() returns */
    int connecting, connected;
    int detached;
    int refuse;       /* submit() refuses though connected (hiredis out of
                         memory, a context being torn down) */
    int refused;      /* submits refused so far */
    fake_cmd cmds[FAKE_MAX_CMDS];
    int ncmds, head; /* head: oldest unanswered */
    char host[64];   /* where the last connect went ("" for a unix socket) */
    int port;
    const char *role; /* what ROLE answers in the handshake: "master" (NULL) */
    int native;       /* RDL_NATIVE_* bits the probe (COMMAND INFO DELIFEQ DELEX)
                         finds on the main link: 0, Redis 7's answer, by default */
    const char *scripts_refused; /* what the main link's handshake EVAL of
                                    "return 1" is answered (an error), or
                                    NULL: 1, scripts run */
    fake_side side;
    fake_side peers[FAKE_PEERS];
} fake;

/* A client on the fake (o may be NULL), attached, connected, handshake done. */
void fake_start(fake *f, const redlease_client_options *o);
/* Same without connecting. */
void fake_attach(fake *f, const redlease_client_options *o);
/* Finish the connect and answer the handshake (AUTH/SELECT OK, PING PONG). */
void fake_connect(fake *f);
/* Answer every pending command as the handshake's (PING: PONG, others
 * OK), without running the timer. */
/* The fake server's clock (TIME) is the virtual one plus this, in ms. */
#define FAKE_SERVER_CLOCK_MS INT64_C(1700000000000)
/* Answers the next command, TIME, with the fake server's clock. */
void fake_reply_time(fake *f);
void fake_answer_handshake(fake *f);
/* Finish the connect, leaving the handshake commands for the test to answer. */
void fake_connect_raw(fake *f);
/* The pending connect fails. */
void fake_connect_fail(fake *f);
/* Fire the loop timer while it is due at the current virtual time. */
void fake_run(fake *f);
/* Move the clock forward by ms, firing the timer at each deadline on the way. */
void fake_advance(fake *f, int64_t ms);
/* Move to an absolute virtual time. */
void fake_until(fake *f, int64_t t);

/* The oldest unanswered command, or NULL. */
fake_cmd *fake_peek(fake *f);
int fake_pending(const fake *f);
/* Answer the oldest unanswered command. */
void fake_reply_status(fake *f, const char *s);
void fake_reply_nil(fake *f);
void fake_reply_int(fake *f, long long v);
void fake_reply_err(fake *f, const char *s);
void fake_reply_str(fake *f, const char *s);
/* An array of n integers (WAITAOF's answer). */
void fake_reply_ints(fake *f, int n, const long long *v);
/* The transport has dispatched a read (what redlease_client_on_io()
 * does after hiredis's read): the callbacks the replies made due run now. */
void fake_read_done(fake *f);
/* A read as redlease_client_on_io() brackets it: the replies given
 * between begin and end are one batch (the client entered once). */
void fake_read_begin(fake *f);
void fake_read_end(fake *f);
/* The answer to the probe (COMMAND INFO DELIFEQ DELEX) of a server with
 * these RDL_NATIVE_* commands. */
void fake_reply_probe(fake *f, int native);
/* Answer with r. */
void fake_reply(fake *f, const rdl_reply *r);
/* Answer with a reply as hiredis parsed it (converted as the hiredis
 * transport converts it). */
struct redisReply;
void fake_reply_raw(fake *f, const struct redisReply *r);
/* The connection breaks: pending commands get NULL, then the disconnect. */
void fake_break(fake *f);
/* Frees what the fake recorded of one command (its arguments). */
void fake_cmd_free(fake_cmd *c);
/* Free the client (and the fake's commands). */
void fake_free(fake *f);

/* The side link (a Sentinel): finish its connect and answer its handshake;
 * fail its connect; the oldest unanswered command that is not a
 * subscription; answers; a message on its subscription (channel, text);
 * the link breaks (every command, subscription too, gets NULL). */
void fake_side_connect(fake *f);
void fake_side_connect_fail(fake *f);
fake_cmd *fake_side_peek(fake *f);
void fake_side_reply_addr(fake *f, const char *host, const char *port);
void fake_side_reply_nil(fake *f);
void fake_side_reply_err(fake *f, const char *s);
void fake_side_push(fake *f, const char *channel, const char *text);
void fake_side_break(fake *f);

/* Any link beside the client's own: the oldest unanswered command that is
 * not a subscription; answers; finish its connect and answer its
 * handshake (AUTH, SELECT, PING), then run the timer; the link breaks;
 * the link that connected to port (NULL: none). */
fake_cmd *fake_link_peek(fake_side *s);
void fake_link_reply(fake_side *s, const rdl_reply *r);
void fake_link_reply_status(fake_side *s, const char *text);
void fake_link_reply_int(fake_side *s, long long v);
void fake_link_reply_err(fake_side *s, const char *text);
void fake_link_connect(fake *f, fake_side *s);
void fake_link_break(fake_side *s);
/* On the link's open subscription: its confirmation ["subscribe", channel,
 * 1], or a message ["message", channel, text]. */
void fake_link_subscribed(fake_side *s);
void fake_link_message(fake_side *s, const char *channel, const char *text);
fake_side *fake_link_at(fake *f, int port);

/* The SHA-1 EVALSHA names script i by. */
const char *fake_sha(int i);

/* Counting allocator: live allocations, and failing the Nth from now. */
void fake_alloc_install(void);
long fake_alloc_live(void);
void fake_alloc_fail_at(long n); /* 0: never */
long fake_alloc_count(void);

#endif
