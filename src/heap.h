/* SPDX-License-Identifier: MIT */
/* The client's deadlines: a 4-ary min-heap, beside a few sorted runs.
 * Nodes are embedded in their owners and remember their slot, so moving a
 * deadline never searches and never fails: only rdl_heap_insert() can
 * (the heap keeps room for every node, wherever it is). The client keeps
 * every lock in here for the lock's whole life (at = RDL_NEVER when it
 * waits for nothing), so rescheduling in a reply or timer path can never
 * run out of memory.
 *
 * A run is a ring of slots whose deadlines never decrease from its oldest
 * to its newest: a deadline no earlier than a run's newest is appended to
 * it in O(1), touching no other node, where the heap would sift it past
 * O(log n) others (each one's slot index written into its owner: a cache
 * miss apiece with many leases). Deadlines made by adding a fixed delay to
 * the time (every command's timeout, every lease's next renewal) come in
 * that order, so each kind fills a run of its own; a deadline no run takes
 * goes to the heap. The earliest deadline is the least of the heap's top
 * and each run's oldest. */
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
    RDL_WAKE_WAKER,
    RDL_WAKE_CLOSE,
    RDL_WAKE_INSPECT /* an inspection's deadline (src/inspect.h) */
};

typedef struct rdl_heap_node {
    int64_t at;
    uint32_t idx;  /* where it is (heap.c), or RDL_HEAP_OUT */
    uint32_t kind; /* enum rdl_wake_kind: 16 bytes in all, in every lock */
} rdl_heap_node;

#define RDL_HEAP_OUT UINT32_MAX

/* A slot keeps its node's deadline beside the pointer: a sift compares
 * four children in one cache line, never touching the nodes. */
typedef struct rdl_heap_slot {
    int64_t at;
    rdl_heap_node *x; /* NULL in a run: a node that left it */
} rdl_heap_slot;

#define RDL_HEAP_RUNS 4

typedef struct rdl_heap_run {
    rdl_heap_slot *v;         /* cap slots (a power of two), or NULL */
    uint32_t cap, head, tail; /* entries head..tail-1, counters mod 2^32;
                                 the oldest and the newest are nodes' */
    int64_t last;             /* the newest's deadline, when not empty */
} rdl_heap_run;

typedef struct rdl_heap {
    rdl_heap_slot *v; /* the heap: its root at v[3], v aligned to 64 bytes */
    void *mem;        /* the allocation v points into */
    size_t n, cap;    /* nodes in the heap; its room */
    size_t total;     /* nodes in all (heap and runs): cap >= total */
    rdl_heap_run run[RDL_HEAP_RUNS];
} rdl_heap;

void rdl_heap_init(rdl_heap *h);
void rdl_heap_free(rdl_heap *h);
/* 0, or REDLEASE_ENOMEM (the node is then not in the heap). */
int rdl_heap_insert(rdl_heap *h, rdl_heap_node *x, int64_t at);
void rdl_heap_remove(rdl_heap *h, rdl_heap_node *x);
void rdl_heap_update(rdl_heap *h, rdl_heap_node *x, int64_t at);

/* The node with the earliest deadline, or NULL. */
static inline rdl_heap_node *rdl_heap_top(const rdl_heap *h)
{
    rdl_heap_node *top = h->n ? h->v[3].x : NULL;
    int64_t at = top ? h->v[3].at : 0;
    for (int r = 0; r < RDL_HEAP_RUNS; r++) {
        const rdl_heap_run *run = &h->run[r];
        if (run->head == run->tail) continue;
        const rdl_heap_slot *s = &run->v[run->head & (run->cap - 1)];
        if (!top || s->at < at) top = s->x, at = s->at;
    }
    return top;
}
/* A guess at the node that comes after the top (to prefetch by): the next
 * in the top's run, or the earliest of the heap root's children; or NULL.
 * *at is its deadline, read from the slot: the node itself is not read. */
rdl_heap_node *rdl_heap_second(const rdl_heap *h, int64_t *at);

#endif
