/* A binary min-heap of deadlines. Nodes are embedded in their owners and
 * remember their slot, so moving a deadline is O(log n) and never allocates:
 * only rl_heap_insert() can fail. The client keeps every lock in the heap
 * for the lock's whole life (at = RL_NEVER when it waits for nothing), so
 * rescheduling in a reply or timer path can never run out of memory. */
#ifndef REDLEASE_HEAP_H
#define REDLEASE_HEAP_H
#include <stddef.h>
#include <stdint.h>

#define RL_NEVER INT64_MAX

typedef struct rl_heap_node {
    int64_t at;
    size_t idx; /* slot in the heap, or RL_HEAP_OUT */
} rl_heap_node;

#define RL_HEAP_OUT ((size_t)-1)

typedef struct rl_heap {
    rl_heap_node **v;
    size_t n, cap;
} rl_heap;

void rl_heap_init(rl_heap *h);
void rl_heap_free(rl_heap *h);
/* 0, or REDLEASE_ENOMEM (the node is then not in the heap). */
int rl_heap_insert(rl_heap *h, rl_heap_node *x, int64_t at);
void rl_heap_remove(rl_heap *h, rl_heap_node *x);
void rl_heap_update(rl_heap *h, rl_heap_node *x, int64_t at);
static inline rl_heap_node *rl_heap_top(const rl_heap *h) { return h->n ? h->v[0] : NULL; }

#endif
