/* SPDX-License-Identifier: MIT */
/* The client's private header: struct redlease_client (nodes, timer,
 * delivery of callbacks, lifetime) and what client.c offers the lease state
 * machine (src/lock.h). Pure core: no hiredis here; each node's connection
 * (src/node.h, src/conn.h) reaches Redis through rdl_transport.
 *
 * Two rules keep reentrancy simple:
 *  - User callbacks of locks (on_acquire, on_lost, on_release) are only run
 *    from redlease_client_on_timer() or after a read (rdl_client_drain()),
 *    never inside a transport callback or an API call. State changes queue
 *    them on c->notify and ask for an immediate tick; either drains.
 *  - c->svc.depth counts nested entries into the library. redlease_client_free()
 *    inside any of them only marks the client; the outermost entry tears it
 *    down (the timer at once, a transport callback via a 0 ms timer, since
 *    hiredis must not be freed from inside its own callbacks).
 */
#ifndef REDLEASE_CLIENT_H
#define REDLEASE_CLIENT_H

#include <stdint.h>

#include "backoff.h"
#include "cluster.h"
#include "conn.h"
#include "heap.h"
#include "inspect.h"
#include "list.h"
#include "lock.h"
#include "node.h"
#include "nodes.h"
#include "quorum.h"
#include "redlease.h"
#include "req.h"
#include "sentinel.h"
#include "svc.h"
#include "transport.h"
#include "waker.h"

struct redlease_client {
    /* the locks and what they use (src/lock.h): the key prefix, the
     * command timeout (each lock operation's, and a close's), the lists,
     * the locks' counters, and the lifetime flags they read */
    rdl_locks set;

    /* the services every layer uses (clock, generator, heap, loop, event
     * hook, errstr, nesting): src/svc.h */
    rdl_svc svc;
    int64_t armed_at; /* the time the loop timer was last set for, -1: not set (arm()) */

    /* The one node (connection and what waits on it), embedded: it lives
     * exactly as long as the client and costs no allocation (nor a failure
     * path); fake.c reaches its connection as &c->main.conn. */
    rdl_node main;
    /* Every node, main first (nodes.v[0]); a Cluster's other seeds and
     * primaries, or a quorum's members, after it: src/nodes.h. */
    rdl_nodes nodes;
    rdl_cluster *cluster; /* the router (src/cluster.h), or NULL */
    rdl_quorum *quorum;   /* the quorum (src/quorum.h): main is its node, the
                             members are nodes[1..]; or NULL */
    rdl_heap_node close_wake; /* a graceful close's deadline (RDL_WAKE_CLOSE) */
    /* With Sentinel (client options): where the primary is; its link's
     * deadline is its own heap node (sentinel->wake). NULL without. */
    rdl_sentinel *sentinel;
    /* The wake-up channel of queued handles (src/waker.h): its link's
     * deadline is its own heap node (waker->wake). Under a quorum it
     * listens on the first member (docs/design.md, section 11.5). */
    rdl_waker *waker;
    /* Inspections in flight (src/inspect.h): redlease_inspect() */
    rdl_inspects inspect;

    /* lifetime (and svc.depth, svc.dead: redlease_client_free() called;
     * set.freeing, set.closing) */
    int close_check;    /* a reply came while closing: see if it is done */
    int64_t close_deadline;
    redlease_close_cb close_cb;
    void *close_arg;
};

/* client.c */
/* A connection's read was dispatched (rdl_conn_on_read_done()): runs now
 * what an immediate timer tick was asked for, unless inside the library. */
void rdl_client_drain(redlease_client *c);
/* A server refused us for good (node's connection, or with node NULL
 * every Sentinel): what the locks of node (all, for NULL) wait to send
 * fails with status. */
void rdl_client_refused(redlease_client *c, const rdl_node *node, int status, int64_t now);
/* Test hook: use another transport for clients attached after this. */
void rdl_client_set_transport_factory(redlease_client *c, rdl_transport_factory fn);

#endif
