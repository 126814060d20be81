/* SPDX-License-Identifier: MIT */
/* The Cluster router (src/cluster.c): which node serves a lock's key.
 *
 * A lease needs only single-slot commands (every key of a resource shares
 * one hash tag, src/keys.c), so the router is small: the slot map from
 * CLUSTER SLOTS (slot -> primary), one node per primary on the client's
 * loop (src/node.h, connected when a lock first needs it), MOVED (the map
 * is corrected for that slot, and refreshed whole soon after) and ASK (the
 * one command goes again, behind ASKING, to the node importing the slot).
 * The map is asked again, at most every RDL_CLUSTER_REFRESH_MS (twice as
 * long after each answer in a row that was no map, up to 32 times), after
 * a MOVED and whenever a node's connection fails (a failover), from a
 * node that is ready, in turn. Without a map yet, a lock goes to the first
 * seed, and the router sends its commands on where they are redirected.
 *
 * What it does not do (docs/design.md, section 9): commands over several
 * slots, reading from replicas, pub/sub across shards. It sits behind the
 * node and transport seams, so a router on a Cluster client library
 * (libvalkey) could replace it.
 */
#ifndef REDLEASE_CLUSTER_H
#define REDLEASE_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "heap.h"
#include "nodes.h"
#include "req.h"
#include "svc.h"
#include "transport.h"

struct rdl_node;

/* What the router tells its owner. */
typedef struct rdl_cluster_owner {
    /* A new map was read: every lock goes where rdl_cluster_route() now
     * says (one whose node changed sends from there). */
    void (*remap)(void *owner, int64_t now);
} rdl_cluster_owner;

/* A command follows at most this many redirects; then the redirect is
 * its failure, a transient one (a Cluster still moving its slots). */
#define RDL_MAX_REDIRECTS 5
/* The map is not asked for more often than this. */
#define RDL_CLUSTER_REFRESH_MS 100
/* A map that still names a node we lost is asked again after
 * RDL_CLUSTER_REFRESH_MS, doubling up to this many times (1.6 s): a
 * failover promotes a replica within about the node timeout, and its
 * slots' leases must reach it before their TTL runs out, not at the lost
 * node's next failed reconnect (up to reconnect_max_ms on). */
#define RDL_CLUSTER_STALE_DOUBLINGS 4

typedef struct rdl_cluster {
    rdl_nodes *nodes;   /* the client's nodes: the router makes the primaries there */
    rdl_svc *svc;
    int64_t command_timeout; /* how long the map query may take */
    const rdl_cluster_owner *ops;
    void *owner;
    rdl_heap_node wake; /* the next refresh, or the answer's deadline (RDL_WAKE_CLUSTER) */
    uint16_t *slots;    /* slot -> the client's node index + 1; 0: not known */
    int loaded;         /* a map was read */
    rdl_req *query;     /* CLUSTER SLOTS in flight, or NULL */
    int64_t answer_by;  /* its deadline */
    int64_t refresh_at; /* a refresh is wanted from then on, or RDL_NEVER */
    int64_t last_sent;  /* when the last one was sent, or 0 */
    int failures;       /* answers in a row that were no map (errors, no answer) */
    int stale;          /* maps in a row that named a node we lost (a failover under way) */
    size_t next_ask;    /* the node to ask first next time */
} rdl_cluster;

/* One slot range of a CLUSTER SLOTS answer: slots from..to served by the
 * primary at host (hlen bytes, not NUL-terminated; empty: the node asked,
 * for an empty or NIL host) and port. */
typedef int (*rdl_cluster_range_fn)(void *arg, unsigned from, unsigned to, const char *host,
                                    size_t hlen, int port);
/* Reads a CLUSTER SLOTS answer, range by range (fn returning nonzero
 * stops it with that value); 0, or -1 for an answer of another shape.
 * Ranges whose primary has no usable address ("?", a NUL inside) are
 * left out. */
int rdl_cluster_parse_slots(const rdl_reply *r, rdl_cluster_range_fn fn, void *arg);
/* Reads "MOVED slot host:port" or "ASK slot host:port": 1 with *ask,
 * *slot, the host in [*host, *host + *hlen) (empty for ":port": the node
 * that answered) and *port; 0 for any other reply. */
int rdl_cluster_parse_redirect(const rdl_reply *r, int *ask, unsigned *slot, const char **host,
                               size_t *hlen, int *port);

/* A router over nodes (whose first is the first seed), reporting to owner
 * through ops; 0 or ENOMEM. It sees every reply of those nodes, and of
 * those made later, before their requests' handlers (rdl_nodes_set_router):
 * a redirect of a request whose handler can send it again (rdl_req_ops's
 * follow, resend, unsent) goes on to the node it names, at most
 * RDL_MAX_REDIRECTS times, and the handler hears only the final answer
 * (or the redirect, as its failure). */
int rdl_cluster_init(rdl_cluster *cl, rdl_nodes *nodes, rdl_svc *svc, int64_t command_timeout,
                     const rdl_cluster_owner *ops, void *owner);
void rdl_cluster_free(rdl_cluster *cl);

/* The node a key goes to (its slot's primary, or without one known a seed);
 * never NULL. */
struct rdl_node *rdl_cluster_route(rdl_cluster *cl, const char *key, size_t len);
/* The map may be stale (a node failed, a redirect): ask again soon. Safe
 * inside transport callbacks. */
void rdl_cluster_want_refresh(rdl_cluster *cl, int64_t now);
/* A node became ready: a refresh waiting for one can go. */
void rdl_cluster_node_ready(rdl_cluster *cl);
/* From the client's timer, at cl->wake. */
void rdl_cluster_run(rdl_cluster *cl, int64_t now);

#endif
