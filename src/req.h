/* SPDX-License-Identifier: MIT */
/* One command on the wire, in a header of its own at the ground floor:
 * every layer carries it and none owns all of it. The connection sends
 * it, reads its send time and epoch (round trips, which connection it went
 * out on) and makes its own for the handshake; its maker (a lock, the
 * WAITs, the router, a quorum's parts, Sentinel, the wake-up channel)
 * fills the rest and hears the reply through the ops it registered.
 *
 * A request lives until the transport reports it (reply or NULL), even
 * when its lock stopped waiting for it (timed out, cancelled): that is how
 * late replies are recognised and never change state wrongly. */
#ifndef REDLEASE_REQ_H
#define REDLEASE_REQ_H

#include <stdint.h>

#include "list.h"
#include "scripts.h"

/* What a request carries. */
enum rdl_req_kind {
    RDL_REQ_ACQUIRE = 1,
    RDL_REQ_RENEW,
    RDL_REQ_RELEASE,
    RDL_REQ_DROP, /* best-effort compare-and-delete nobody waits for */
    RDL_REQ_ACK,  /* WAIT / WAITAOF (the client's), or a lock's ticket for one */
    RDL_REQ_AUTH, /* the handshake, the connection's own, from here on */
    RDL_REQ_SELECT,
    RDL_REQ_PING, /* the server serves us (no NOAUTH, not LOADING) */
    RDL_REQ_TIME, /* when asked: the server's clock, for holders' records (never fails it) */
    RDL_REQ_UPTIME, /* when asked: INFO server's uptime, a quorum's restart guard (never fails it) */
    RDL_REQ_PROBE,  /* when asked: which conditional commands the server has
                       (COMMAND INFO; never fails it) */
    RDL_REQ_SCRIPTS, /* with the probe: whether the server runs scripts for us
                        (EVAL of "return 1"; never fails it) */
    RDL_REQ_ROLE, /* last, when asked: the server is the primary */
    /* a Sentinel connection's own (src/sentinel.c) */
    RDL_REQ_SENTINEL_QUERY, /* SENTINEL get-master-addr-by-name */
    RDL_REQ_SENTINEL_SUB,   /* SUBSCRIBE +switch-master */
    RDL_REQ_CLUSTER_SLOTS,  /* the Cluster router's map query (src/cluster.c) */
    RDL_REQ_ASKING,         /* ASKING before a command an ASK redirect sends */
    RDL_REQ_FENCE_RAISE,    /* a quorum's: every member's counter up to the fence */
    RDL_REQ_WAKE_SUB,       /* SUBSCRIBE to the client's wake-up channel (src/waker.c) */
    RDL_REQ_INSPECT         /* an inspection's read of one server (src/inspect.c) */
};

struct rdl_cmd_spec;
struct rdl_node;
struct rdl_reply;
struct rdl_req;

/* Whose a request is: the module that made it registers these, and the
 * layers below that carry it (node, acks, quorum, the Cluster router)
 * hand its reply back through them, never by calling that module. */
typedef struct rdl_req_ops {
    /* The request came back (r NULL: the link took it): req is the
     * handler's, to free or to send again. */
    void (*reply)(struct rdl_req *req, const struct rdl_reply *r);
    /* Optional: its reply comes soon (rdl_conn_prefetch); fetch what the
     * handler will touch. Reads req; changes nothing. */
    void (*prefetch)(const struct rdl_req *req);
    /* A lock's, for a layer below that sends commands of its own about
     * the lease (a quorum's clean-up and fence raise): fills spec's key,
     * token, TTL and fence key (src/lease_cmd.h). */
    void (*lease)(const struct rdl_req *req, struct rdl_cmd_spec *spec);
    /* A lock's: 1 while it still waits for this request's answer (not
     * timed out, not cancelled: its next attempt is not on the wire). */
    int (*waited)(const struct rdl_req *req);
    /* Optional, for a request that may be sent on to another node (a
     * lock's: a Cluster redirect, which the router follows, src/cluster.c).
     * The router asks follow() first: 1 when req still goes on to node to
     * (ask: req alone goes there, behind ASKING), which its handler notes;
     * 0 (nobody waits for it any more: it did nothing) and the redirect
     * goes to reply() as it is. Then, to being ready, the router sets req's
     * node, epoch, asking and redirects and has resend() build its command
     * again and submit it (0 or a status). Not ready, or not sent, req is
     * handed back to unsent(): its handler sends afresh from to once that
     * is ready, and frees req (1), or leaves it to reply() (0). */
    int (*follow)(struct rdl_req *req, struct rdl_node *to, int ask, int64_t now);
    int (*resend)(struct rdl_req *req);
    int (*unsent)(struct rdl_req *req, struct rdl_node *to, int ask, int64_t now);
} rdl_req_ops;

/* 48 bytes: a client renewing a million leases has many on the wire. */
typedef struct rdl_req {
    const rdl_req_ops *ops;   /* its handler; NULL for a connection's own */
    struct redlease_lock *lk; /* a lock's: holds a reference (read by the lock layer only) */
    struct rdl_node *node;    /* where a lock's (or the router's) went */
    int64_t t0;      /* monotonic time before sending; an ACK's is that of
                        the write it acknowledges (validity counts from it) */
    uint64_t epoch;  /* connection it went out on */
    uint32_t moves;  /* its lock's move count when sent: an older one is
                        from a node the lock has left */
    uint8_t kind;    /* enum rdl_req_kind */
    int8_t script;   /* RDL_SCRIPT_* or -1 (a plain command) */
    uint8_t redirects;     /* times the router sent it on after MOVED or ASK */
    uint8_t native : 2;    /* sent as the server's own command (RDL_NATIVE_*), not a script */
    uint8_t sent_eval : 1; /* resent as EVAL after NOSCRIPT */
    uint8_t no_native : 1; /* the server refused that command: the script from now on */
    uint8_t asking : 1;    /* sent behind ASKING (an ASK redirect) */
    uint8_t probe : 1;     /* a queue release in its two-key form (scripts.c) */
} rdl_req;

/* A lock's ticket for a WAIT (kind RDL_REQ_ACK, src/acks.h): the request
 * the lock waits for (the WAIT's answer comes back through its ops), the
 * terms of the acknowledgement, and what the answer needs besides. */
typedef struct rdl_ack_ticket {
    rdl_req req;          /* first: the lock frees it as its request */
    uint64_t fence;       /* the fence its acquire minted */
    rdl_list link;        /* its place in the node's acks */
    int32_t min_replicas; /* replicas the write must reach */
    int32_t timeout;      /* the WAIT's timeout, ms */
    uint8_t fsync;        /* WAITAOF: fsynced too */
} rdl_ack_ticket;

#endif
