/* SPDX-License-Identifier: MIT */
/* A Redis server the client sends lock commands to (src/node.c): its
 * connection, its deadline in the client's heap, the WAITs in flight on
 * it, and whether what waited for it is to be sent.
 *
 * Each lock goes to one node (lk->node). With one Redis or with Sentinel
 * the client has one node, embedded; the Cluster router and the quorum
 * give a client several, each with a connection of its own on the same
 * loop. Under a quorum, locks go to the embedded node, which has no
 * server: the quorum registered an rdl_node_via table on it, and its
 * calls go there (src/quorum.h), which sends them on to its member nodes.
 *
 * A node is the owner of its connection (rdl_conn_owner): what the
 * connection reports comes here. Replies go back through each request's
 * own ops (src/req.h); what the node's owner (the client) must hear, it
 * hears through the rdl_node_owner table it registered: the node calls
 * nothing above it.
 */
#ifndef REDLEASE_NODE_H
#define REDLEASE_NODE_H

#include <stdint.h>

#include "acks.h"
#include "conn.h"
#include "heap.h"
#include "list.h"
#include "svc.h"

struct rdl_node;

/* What a node tells its owner. Each gets the owner pointer given to
 * rdl_node_init(); none may free the node. */
typedef struct rdl_node_owner {
    /* The handshake passed: the node's connection is ready (what waited
     * for it is sent from the owner's timer: flush). */
    void (*ready)(void *owner, struct rdl_node *n);
    /* The server refused the connection in a way retrying cannot cure
     * (EAUTH, EPERM, ECONFIG): what waits for this node can stop. */
    void (*refused)(void *owner, struct rdl_node *n, int status, int64_t now);
    /* The node's link failed (its REDLEASE_EV_DISCONNECTED was emitted). */
    void (*lost)(void *owner, struct rdl_node *n);
    /* A request of the node came back (a graceful close waits for the last). */
    void (*replied)(void *owner);
    /* What a read made due may run now (rdl_conn_on_read_done()). */
    void (*drain)(void *owner);
    /* From rdl_node_run(): the node is ready and flush was wanted (it
     * became ready, or rdl_node_flush_soon()): send what waited for it,
     * and have every held lease on it renew at once. */
    void (*flush)(void *owner, struct rdl_node *n, int64_t now);
} rdl_node_owner;

/* A node with no server of its own (the quorum's): its calls go to the
 * registrant (src/quorum.c) with its arg, not to its connection. A server
 * node has none (NULL). */
typedef struct rdl_node_via {
    int (*submit)(void *arg, rdl_req *req, int argc, const char **argv, const size_t *lens);
    int (*ready)(const void *arg);
    uint64_t (*epoch)(const void *arg);
    int64_t (*rtt_floor)(const void *arg);
    int64_t (*server_ms)(const void *arg, int64_t now);
    int (*refusal)(const void *arg);
    int (*status)(const void *arg);
    void (*note_timeout)(void *arg, int64_t sent_at, int64_t now);
    /* The server whose answer is being reported (rdl_node_name), or NULL. */
    const char *(*name)(const void *arg);
    /* 1 when too many of its servers refuse scripts for it to work
     * (rdl_node_scripts_off), and one of their texts. */
    int (*scripts_off)(const void *arg);
    const char *(*scripts_why)(const void *arg);
} rdl_node_via;

/* What sees a node's replies before their requests' handlers do: a layer
 * above that sends requests on elsewhere (the Cluster router: a redirect
 * goes to the node it names) registers it on the nodes it routes to. */
typedef struct rdl_node_router {
    /* req's reply r came (never NULL): 1 when the router took req (sent
     * it on, or handed it back to its handler), so req's reply() is not
     * called; 0: it goes to reply() as it is. */
    int (*reply)(void *arg, struct rdl_node *n, rdl_req *req, const rdl_reply *r);
} rdl_node_router;

typedef struct rdl_node {
    rdl_svc *svc;
    const rdl_node_owner *owner_ops;
    void *owner;
    size_t index;       /* its place in c->nodes (0: the embedded one) */
    rdl_conn conn;
    rdl_heap_node wake; /* the connection's deadline (kind RDL_WAKE_NODE) */
    rdl_acks acks;      /* the WAIT in flight and the writes waiting for one */
    int flush_needed;   /* became ready: the owner's flush is due (only
                           acted on while ready, so what a broken link owed
                           waits for the next one) */
    int moving;         /* dropped to go where a Sentinel says: the
                           disconnect that follows is ours (the owner's) */
    uint32_t serves;    /* Cluster: slots the last map gives it */
    const rdl_node_via *via; /* the quorum's node: where its calls go, or NULL */
    void *via_arg;
    const rdl_node_router *router; /* sees its replies first (a Cluster's), or NULL */
    void *router_arg;
} rdl_node;

/* A node reporting to owner through ops, with the services svc, IDLE: 0
 * or REDLEASE_ENOMEM (then rdl_node_free() still frees what was made). */
int rdl_node_init(rdl_node *n, rdl_svc *svc, const rdl_node_owner *ops, void *owner,
                  const rdl_conn_config *cc);
/* Its calls go to via (with arg) from now on: a node with no server. */
void rdl_node_set_via(rdl_node *n, const rdl_node_via *via, void *arg);
/* Its replies go to router (with arg) first from now on. */
static inline void rdl_node_set_router(rdl_node *n, const rdl_node_router *router, void *arg)
{
    n->router = router;
    n->router_arg = arg;
}
/* The owner's flush is wanted at its next timer run, if the node is
 * ready then (a via that became ready). */
static inline void rdl_node_flush_soon(rdl_node *n) { n->flush_needed = 1; }
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
 * connection's (src/conn.h) for a node of one server, its via's for the
 * quorum's node. A request sent behind ASKING (req->asking: an ASK
 * redirect sent it here) goes right after one (rdl_node_submit_asking()),
 * and should it not go, the link is dropped: a lone ASKING would let the
 * next command on it, maybe another lock's, skip the check that its key
 * is not still on the node the slot leaves. */
int rdl_node_submit_asking(rdl_node *n, rdl_req *req, int argc, const char **argv,
                           const size_t *lens);
static inline int rdl_node_submit(rdl_node *n, rdl_req *req, int argc, const char **argv,
                                  const size_t *lens)
{
    if (n->via) return n->via->submit(n->via_arg, req, argc, argv, lens);
    if (req->asking) return rdl_node_submit_asking(n, req, argc, argv, lens);
    return rdl_conn_submit(&n->conn, req, argc, argv, lens);
}
/* The server's own conditional commands to use on the node (RDL_NATIVE_*):
 * none through a via (a quorum's members are sent scripts, each as the
 * quorum builds them). */
static inline int rdl_node_native(const rdl_node *n)
{
    return n->via ? 0 : rdl_conn_native(&n->conn);
}
/* 1 when the node's server refuses scripts (rdl_conn_scripts_off); a
 * via's, when too many of its servers do; with the server's text. */
static inline int rdl_node_scripts_off(const rdl_node *n)
{
    return n->via ? n->via->scripts_off(n->via_arg) : rdl_conn_scripts_off(&n->conn);
}
/* The node's server refused a script since its handshake (text of len
 * bytes): none go to it on this link from now on. */
static inline void rdl_node_scripts_refused(rdl_node *n, const char *text, size_t len)
{
    if (!n->via) rdl_conn_scripts_refused(&n->conn, text, len);
}
static inline const char *rdl_node_scripts_why(const rdl_node *n)
{
    return n->via ? n->via->scripts_why(n->via_arg) : rdl_conn_scripts_why(&n->conn);
}
static inline uint64_t rdl_node_epoch(const rdl_node *n)
{
    return n->via ? n->via->epoch(n->via_arg) : rdl_conn_epoch(&n->conn);
}
static inline int64_t rdl_node_rtt_floor(const rdl_node *n)
{
    return n->via ? n->via->rtt_floor(n->via_arg) : rdl_conn_rtt_floor(&n->conn);
}
/* The server's clock now in ms, or -1: not known (rdl_conn_server_ms()). */
static inline int64_t rdl_node_server_ms(const rdl_node *n, int64_t now)
{
    return n->via ? n->via->server_ms(n->via_arg, now) : rdl_conn_server_ms(&n->conn, now);
}
/* When its server started, on our clock, or RDL_UNKNOWN_START
 * (rdl_conn_started_at()). */
static inline int64_t rdl_node_started_at(const rdl_node *n)
{
    return n->via ? RDL_UNKNOWN_START : rdl_conn_started_at(&n->conn);
}
static inline int rdl_node_refusal(const rdl_node *n)
{
    return n->via ? n->via->refusal(n->via_arg) : rdl_conn_refusal(&n->conn);
}
static inline int rdl_node_status(const rdl_node *n)
{
    return n->via ? n->via->status(n->via_arg) : rdl_conn_status(&n->conn);
}
static inline void rdl_node_note_timeout(rdl_node *n, int64_t sent_at, int64_t now)
{
    if (n->via)
        n->via->note_timeout(n->via_arg, sent_at, now);
    else
        rdl_conn_note_timeout(&n->conn, sent_at, now);
}
/* The host its connection goes to, or NULL (a unix socket). */
static inline const char *rdl_node_host(const rdl_node *n) { return rdl_conn_host(&n->conn); }
/* The server a request to n went to, for events and error texts: its
 * connection's name (rdl_conn_name); through a via (the quorum's node),
 * the member whose answer is being reported when one answer is, else NULL. */
static inline const char *rdl_node_name(const rdl_node *n)
{
    return n->via ? n->via->name(n->via_arg) : rdl_conn_name(&n->conn);
}
/* Drops the node's link (rdl_conn_restart). */
static inline void rdl_node_restart(rdl_node *n, int status, const char *why)
{
    rdl_conn_restart(&n->conn, status, why);
}

/* Work for the client's timer now, whatever the deadline. */
int rdl_node_due(const rdl_node *n);
/* From the client's timer: the connection's work (its deadline passed, or
 * rdl_node_due()), then the owner's flush once it is ready. */
void rdl_node_run(rdl_node *n, int64_t now);

#endif
