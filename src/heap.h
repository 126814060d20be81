/* SPDX-License-Identifier: MIT */
/* A 4-ary min-heap of deadlines. Nodes are embedded in their owners and
 * remember their slot, so moving a deadline is O(log n) and never allocates:
 * only rdl_heap_insert() can fail. The client keeps every lock in the heap
 * for the lock's whole life (at = RDL_NEVER when it waits for nothing), so
 * rescheduling in a reply or timer path can never run out of memory. */
#ifndef REDLEASE_HEAP_H
#define REDLEASE_HEAP_H
#include <stddef.h>
#include <stdint.h>

#define RDL_NEVER INT64_MAX

/* What a deadline belongs to, so the client's timer knows whose it is
 * (src/client.c); 0 for a lock's, the calloc'd default. */
enum rdl_wake_kind {
    RDL_WAKE_LOCK = 0,
    RDL_WAKE_NODE,
    RDL_WAKE_SENTINEL,
    RDL_WAKE_CLUSTER,
    RDL_WAKE_QUORUM,
    RDL_WAKE_CLOSE
};

typedef struct rdl_heap_node {
    int64_t at;
    uint32_t idx;  /* slot in the heap, or RDL_HEAP_OUT */
    uint32_t kind; /* enum rdl_wake_kind: 16 bytes in all, in every lock */
} rdl_heap_node;

#define RDL_HEAP_OUT UINT32_MAX

/* A slot keeps its node's deadline beside the pointer: a sift compares
 * four children in one cache line, never touching the nodes (a client
 * with 100,000 leases moves a deadline twice per renewal). */
typedef struct rdl_heap_slot {
    int64_t at;
    rdl_heap_node *x;
} rdl_heap_slot;

typedef struct rdl_heap {
    rdl_heap_slot *v;
    size_t n, cap;
} rdl_heap;

void rdl_heap_init(rdl_heap *h);
void rdl_heap_free(rdl_heap *h);
/* 0, or REDLEASE_ENOMEM (the node is then not in the heap). */
int rdl_heap_insert(rdl_heap *h, rdl_heap_node *x, int64_t at);
void rdl_heap_remove(rdl_heap *h, rdl_heap_node *x);
void rdl_heap_update(rdl_heap *h, rdl_heap_node *x, int64_t at);
static inline rdl_heap_node *rdl_heap_top(const rdl_heap *h) { return h->n ? h->v[0].x : NULL; }

#endif
