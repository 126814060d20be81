/* SPDX-License-Identifier: MIT */
/* A Redis server the client sends lock commands to (src/node.c): its
 * connection, its deadline in the client's heap, the WAITs in flight on
 * it, and the locks waiting for it to be ready.
 *
 * Each lock goes to one node (lk->node). With one Redis or with Sentinel
 * the client has one node, embedded; the Cluster router and the quorum
 * give a client several, each with a connection of its own on the same
 * loop. Under a quorum, locks go to the embedded node, which has no
 * server: it hands their requests to the quorum (src/quorum.h), which
 * sends them on to its member nodes. A node is the owner of its connection (rdl_conn_owner): what the
 * connection reports comes here and is passed on to the client and to the
 * node's locks.
 */
#ifndef REDLEASE_NODE_H
#define REDLEASE_NODE_H

#include <stdint.h>

#include "acks.h"
#include "conn.h"
#include "heap.h"
#include "list.h"
#include "quorum.h"

struct redlease_client;

typedef struct rdl_node {
    struct redlease_client *c;
    size_t index;       /* its place in c->nodes (0: the embedded one) */
    rdl_conn conn;
    rdl_heap_node wake; /* the connection's deadline (kind RDL_WAKE_NODE) */
    rdl_acks acks;      /* the WAIT in flight and the writes waiting for one */
    int flush_needed;   /* became ready: send what waited, the locks whose
                           lk->parked is set (only read while
                           ready, so what a broken link owed waits for the
                           next one) */
    int moving;         /* dropped to go where a Sentinel says: the
                           disconnect that follows is ours */
    uint32_t serves;    /* Cluster: slots the last map gives it */
    rdl_quorum *quorum; /* the client's main node under a quorum: no server
                           of its own, its calls go to the quorum's members
                           (src/quorum.h) */
} rdl_node;

/* A node of client c, IDLE: 0 or REDLEASE_ENOMEM (then rdl_node_free()
 * still frees what was made). */
int rdl_node_init(rdl_node *n, struct redlease_client *c, const rdl_conn_config *cc);
/* Closes the connection (its requests and the WAITs' tickets come back,
 * NULL) and takes the node out of the heap. */
void rdl_node_free(rdl_node *n);
/* Puts the node's deadline in the client's heap and makes its transport on
 * the client's loop; 0 or a status (nothing kept). */
int rdl_node_attach(rdl_node *n);
/* Something is to be sent here: a node that has not connected yet (a
 * Cluster primary met for the first time) starts now. */
void rdl_node_use(rdl_node *n, int64_t now);
/* The node is ready for lock commands: connected, handshake done, and the
 * client not ending. */
int rdl_node_ready(const rdl_node *n);
/* What the locks and the WAITs ask of a node, never of its connection
 * directly: the node decides how a request reaches Redis. Each is its
 * connection's (src/conn.h) for a node of one server, the quorum's for
 * the quorum's node. */
static inline int rdl_node_submit(rdl_node *n, rdl_req *req, int argc, const char **argv,
                                  const size_t *lens)
{
    if (n->quorum) return rdl_quorum_submit(n->quorum, req, argc, argv, lens);
    return rdl_conn_submit(&n->conn, req, argc, argv, lens);
}
/* The server's own conditional commands to use on the node (RDL_NATIVE_*):
 * a quorum's members are sent scripts, each as the quorum builds them. */
static inline int rdl_node_native(const rdl_node *n)
{
    return n->quorum ? 0 : rdl_conn_native(&n->conn);
}
static inline uint64_t rdl_node_epoch(const rdl_node *n)
{
    return n->quorum ? n->quorum->epoch : rdl_conn_epoch(&n->conn);
}
static inline int64_t rdl_node_rtt_floor(const rdl_node *n)
{
    return n->quorum ? rdl_quorum_rtt_floor(n->quorum) : rdl_conn_rtt_floor(&n->conn);
}
static inline int rdl_node_refusal(const rdl_node *n)
{
    return n->quorum ? rdl_quorum_refusal(n->quorum) : rdl_conn_refusal(&n->conn);
}
static inline int rdl_node_status(const rdl_node *n)
{
    return n->quorum ? rdl_quorum_status(n->quorum) : rdl_conn_status(&n->conn);
}
static inline void rdl_node_note_timeout(rdl_node *n, int64_t sent_at, int64_t now)
{
    if (n->quorum)
        rdl_quorum_note_timeout(n->quorum, sent_at, now);
    else
        rdl_conn_note_timeout(&n->conn, sent_at, now);
}
/* The host its connection goes to, or NULL (a unix socket). */
static inline const char *rdl_node_host(const rdl_node *n) { return rdl_conn_host(&n->conn); }
/* Drops the node's link (rdl_conn_restart). */
static inline void rdl_node_restart(rdl_node *n, int status, const char *why)
{
    rdl_conn_restart(&n->conn, status, why);
}

/* Work for the client's timer now, whatever the deadline. */
int rdl_node_due(const rdl_node *n);
/* From the client's timer: the connection's work (its deadline passed, or
 * rdl_node_due()), then what waited for it once it is ready. */
void rdl_node_run(rdl_node *n, int64_t now);

#endif
