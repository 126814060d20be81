/* SPDX-License-Identifier: MIT */
/* Every node of a client (src/nodes.c): the embedded one first, then the
 * ones made for a Cluster's seeds and the primaries its map names, or a
 * quorum's members. Each is made with the first one's connection
 * settings, to its own address, reporting to the owner the set was given;
 * all live as long as the client. */
#ifndef REDLEASE_NODES_H
#define REDLEASE_NODES_H

#include <stddef.h>

#include "node.h"
#include "svc.h"

typedef struct rdl_nodes {
    rdl_node **v; /* v[i]->index == i */
    size_t n, cap;
    rdl_svc *svc;
    const rdl_node_owner *ops; /* what the nodes it makes report to */
    void *owner;
    const rdl_node_router *router; /* sees every node's replies first, or NULL */
    void *router_arg;
} rdl_nodes;

/* A set whose first node is first (made by the caller); 0 or ENOMEM. */
int rdl_nodes_init(rdl_nodes *s, rdl_node *first, rdl_svc *svc, const rdl_node_owner *ops,
                   void *owner);
/* The node at host (hlen bytes) and port, made (and attached, once the
 * loop is) if there is none yet; NULL when out of memory, or past what a
 * slot map's 16 bits can name. */
rdl_node *rdl_nodes_at(rdl_nodes *s, const char *host, size_t hlen, int port);
/* Every node's replies, those of the nodes made from now on too, go to
 * router (with arg) first (src/node.h). */
void rdl_nodes_set_router(rdl_nodes *s, const rdl_node_router *router, void *arg);
/* Frees the nodes it made (rdl_node_free() them first) and the array. */
void rdl_nodes_free(rdl_nodes *s);

#endif
