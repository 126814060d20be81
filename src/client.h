/* SPDX-License-Identifier: MIT */
/* Internal structures shared by client.c (connection, timer, delivery of
 * callbacks, lifetime) and lock.c (the lease state machine). Pure core: no
 * hiredis here; the connection is reached through rdl_transport.
 *
 * Two rules keep reentrancy simple:
 *  - User callbacks of locks (on_acquire, on_lost, on_release) are only run
 *    from redlease_client_on_timer(), never inside a transport callback or
 *    an API call. State changes queue them on c->notify; the timer drains.
 *  - c->depth counts nested entries into the library. redlease_client_free()
 *    inside any of them only marks the client; the outermost entry tears it
 *    down (the timer at once, a transport callback via a 0 ms timer, since
 *    hiredis must not be freed from inside its own callbacks).
 */
#ifndef REDLEASE_CLIENT_H
#define REDLEASE_CLIENT_H

#include <stdint.h>

#include "backoff.h"
#include "heap.h"
#include "list.h"
#include "redlease.h"
#include "scripts.h"
#include "token.h"
#include "transport.h"

/* What a request carries. */
enum rdl_req_kind {
    RDL_REQ_ACQUIRE = 1,
    RDL_REQ_RENEW,
    RDL_REQ_RELEASE,
    RDL_REQ_DROP, /* best-effort compare-and-delete nobody waits for */
    RDL_REQ_AUTH,
    RDL_REQ_SELECT,
    RDL_REQ_PING /* last of the handshake: the server serves us (no NOAUTH, not LOADING) */
};

/* One command on the wire. It lives until the transport reports it (reply
 * or NULL), even when its lock stopped waiting for it (timed out, cancelled):
 * that is how late replies are recognised and never change state wrongly. */
typedef struct rdl_req {
    struct redlease_lock *lk; /* holds a reference; NULL for handshake */
    int kind;
    int script;      /* RDL_SCRIPT_* or -1 (a plain command) */
    int sent_eval;   /* resent as EVAL after NOSCRIPT */
    int64_t t0;      /* monotonic time before sending */
    uint64_t epoch;  /* connection it went out on */
} rdl_req;

enum rdl_conn_state {
    RDL_CONN_IDLE,      /* no loop yet */
    RDL_CONN_CONNECTING,
    RDL_CONN_HANDSHAKE, /* AUTH / SELECT / PING in flight */
    RDL_CONN_READY,
    RDL_CONN_DOWN,      /* broken; the transport's disconnect report follows */
    RDL_CONN_BACKOFF    /* waiting to reconnect */
};

enum rdl_lock_state {
    RDL_LOCK_ACQUIRING,
    RDL_LOCK_HELD,
    RDL_LOCK_RELEASING,
    RDL_LOCK_DONE /* failed, cancelled or lost: waits for redlease_release() */
};

/* Bits of lk->notify: callbacks owed to the user, run in this order. */
enum { RDL_NOTIFY_ACQUIRE = 1, RDL_NOTIFY_LOST = 2, RDL_NOTIFY_RELEASE = 4 };

struct redlease_lock {
    struct redlease_client *c;
    rdl_heap_node wake;  /* the lock's one deadline in the client's heap */
    rdl_list link;       /* c->locks */
    rdl_list wait_link;  /* c->waiting: has something to send, no connection */
    rdl_list notify_link; /* c->notify: callbacks owed */
    unsigned refs;      /* requests in flight that point here */
    int user_ref;       /* 1 until on_release has run (or the client ends) */
    int state;          /* enum rdl_lock_state */
    unsigned notify;    /* RDL_NOTIFY_* bits owed */
    /* flags, one word for all (a client may hold a million handles) */
    unsigned release_called : 1;
    unsigned ended : 1;         /* ended by redlease_client_free() */
    unsigned fencing : 1;       /* option: mint a fence */
    unsigned maybe_set : 1;     /* an attempt may have written our key (sent,
                                   no answer or an answer not used): later
                                   attempts reclaim it, an acquire ending
                                   without a lease deletes it */
    unsigned op_cut : 1;        /* op_deadline is op_limit, before a command timeout */
    unsigned release_retry : 1; /* a release waits for its retry (c->release_retries) */
    unsigned drop_pending : 1;  /* a compare-and-delete of our key is to be sent */
    int acquire_status, lost_reason, release_status;
    redlease_acquire_cb on_acquire;
    redlease_lost_cb on_lost;
    redlease_release_cb on_release;
    void *arg, *release_arg;

    /* options, validated */
    int64_t ttl, renew_interval, max_hold;
    int max_attempts;

    /* acquiring */
    rdl_backoff backoff;
    int attempts;
    int64_t budget_end; /* no attempt starts after this */
    int last_status;    /* outcome of the last attempt that ended, or 0 */

    /* the operation in progress (acquire attempt, renewal, release) */
    int op;             /* RDL_REQ_ACQUIRE / RENEW / RELEASE or 0 */
    int64_t op_deadline;
    int64_t op_limit;   /* no op deadline beyond this: the wait budget of an
                           acquire, the first deadline of a release */
    rdl_req *req;        /* the op's request on the wire, or NULL */
    int64_t drop_until; /* a pending drop: after this the key has expired by itself */
    int64_t next_action; /* next attempt or renewal, or RDL_NEVER */

    /* held */
    int64_t valid_until, hold_until;
    uint64_t confirm_epoch; /* connection that last confirmed the lease */
    uint64_t fence;

    char token[RDL_TOKEN_LEN + 1];
    char *fence_key;     /* points into key[] storage, or NULL */
    uint32_t keylen, fence_keylen; /* keys may hold any byte, NUL included */
    char key[]; /* lock key, NUL, then the fence key if fencing (src/keys.c) */
};

struct redlease_client {
    /* options */
    char *host, *unix_path, *username, *password, *prefix;
    int port, db;
    int64_t connect_timeout, command_timeout;
    size_t prefix_len;

    /* environment */
    redlease_clock_fn clock;
    void *clock_arg;
    rdl_xorshift xs;
    rdl_rng rng;
    const redlease_loop_ops *loop;
    void *loop_data;
    int64_t armed_at; /* what the loop timer was last set to, or -1 */
    redlease_event_cb event_cb;
    void *event_arg;

    /* connection */
    rdl_transport tr; /* tr.ops is NULL until a loop is attached */
    int conn;           /* enum rdl_conn_state */
    uint64_t epoch;     /* counts connections that became ready */
    int64_t conn_at;    /* deadline, reconnect time, or (ready) stall check */
    int64_t stall_since; /* ready: send time of a timed-out command, or -1 */
    rdl_heap_node wake;
    rdl_backoff reconnect;
    int hs_pending;     /* handshake replies awaited */
    uint64_t reqs_out;  /* submitted, not yet reported back by the transport */
    int64_t rtt_floor;  /* shortest round trip on this connection, from its
                           handshake on (a stalled reply says nothing of the
                           path), or 0 */
    uint64_t rtt_epoch; /* the connection rtt_floor was measured on */
    int hs_failed;      /* status, or 0 */
    int conn_error;     /* why the last connection failed; 0 once one is ready */
    int conn_definite;  /* that failure will not heal by retrying (EAUTH...) */
    int drop_status;    /* a reply said this connection is no use: drop it */
    uint64_t release_retries; /* releases waiting to retry (close waits for them) */
    int flush_needed;   /* became ready: send what waited */
    char errstr[128];

    /* locks */
    rdl_heap heap;
    rdl_list locks, waiting, notify;
    redlease_stats stats;

    /* lifetime */
    int depth;          /* nested entries into the library */
    int dead;           /* redlease_client_free() called */
    int freeing;        /* redlease_client_free() is ending the handles */
    int closing;        /* redlease_client_close() called */
    int close_check;    /* a reply came while closing: see if it is done */
    int64_t close_deadline;
    redlease_close_cb close_cb;
    void *close_arg;

    /* tests replace the transport (see rdl_client_set_transport_factory) */
    int (*transport_new)(rdl_transport *out, struct redlease_client *c,
                         const redlease_loop_ops *loop, void *loop_data);
};

/* client.c */
int64_t rdl_now(const redlease_client *c);
int rdl_client_ready(const redlease_client *c);
void rdl_enter(redlease_client *c);
void rdl_leave(redlease_client *c);
void rdl_emit(redlease_client *c, const redlease_event *ev);
void rdl_set_errstr(redlease_client *c, const char *s, size_t n);
/* The status an operation that could not be sent reports. */
int rdl_client_conn_status(const redlease_client *c);
/* Sends argv on the connection for req; 0 or a status (req not sent). */
int rdl_client_submit(redlease_client *c, rdl_req *req, int argc, const char **argv, const size_t *lens);
/* A command sent at sent_at is still unanswered at now, past its timeout
 * (or past the lease it was renewing). */
void rdl_client_note_timeout(redlease_client *c, int64_t sent_at, int64_t now);
/* Test hook: use another transport for clients attached after this. */
void rdl_client_set_transport_factory(redlease_client *c,
                                     int (*fn)(rdl_transport *, redlease_client *,
                                               const redlease_loop_ops *, void *));

/* lock.c, called by client.c */
void rdl_lock_run(struct redlease_lock *lk, int64_t now);
void rdl_lock_send_waiting(struct redlease_lock *lk, int64_t now);
/* Nonzero when req was sent again (NOSCRIPT -> EVAL) and lives on. */
int rdl_lock_on_reply(rdl_req *req, const rdl_reply *r, int64_t now);
void rdl_lock_on_ready(struct redlease_lock *lk, int64_t now);
/* The server refused the connection for good (credentials, database): ops
 * waiting for a connection fail with status. */
void rdl_lock_on_refused(struct redlease_lock *lk, int status, int64_t now);
void rdl_lock_deliver(struct redlease_lock *lk);
void rdl_lock_end_by_client(struct redlease_lock *lk);
void rdl_lock_close(struct redlease_lock *lk, int64_t now);
void rdl_lock_unref(struct redlease_lock *lk);
void rdl_lock_destroy(struct redlease_lock *lk);

/* options.c */
int rdl_lock_options_check(const redlease_lock_options *o);
int rdl_client_options_check(const redlease_client_options *o);

#endif
