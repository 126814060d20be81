/* SPDX-License-Identifier: MIT */
/* The client's private header: struct redlease_client (connection, timer,
 * delivery of callbacks, lifetime) and what client.c offers the lease state
 * machine (src/lock.h). Pure core: no hiredis here; the connection is
 * reached through rdl_transport.
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
#include "req.h"
#include "transport.h"

enum rdl_conn_state {
    RDL_CONN_IDLE,      /* no loop yet */
    RDL_CONN_CONNECTING,
    RDL_CONN_HANDSHAKE, /* AUTH / SELECT / PING in flight */
    RDL_CONN_READY,
    RDL_CONN_DOWN,      /* broken; the transport's disconnect report follows */
    RDL_CONN_BACKOFF    /* waiting to reconnect */
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
    uint64_t release_retries; /* releases waiting to retry (close waits for them);
                                 lock.c keeps it with each lk->release_retry */
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

/* options.c */
int rdl_client_options_check(const redlease_client_options *o);

#endif
