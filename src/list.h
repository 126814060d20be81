/* Intrusive doubly linked list (circular, with a sentinel head). Nodes are
 * embedded in the objects they link, so linking never allocates. */
#ifndef REDLEASE_LIST_H
#define REDLEASE_LIST_H
#include <stddef.h>

typedef struct rl_list {
    struct rl_list *prev, *next;
} rl_list;

#define RL_CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void rl_list_init(rl_list *h) { h->prev = h->next = h; }
static inline int rl_list_empty(const rl_list *h) { return h->next == h; }
/* A node that is in no list points to itself (after init or remove). */
static inline int rl_list_linked(const rl_list *n) { return n->next != n; }

static inline void rl_list_push_back(rl_list *h, rl_list *n)
{
    n->prev = h->prev;
    n->next = h;
    h->prev->next = n;
    h->prev = n;
}

static inline void rl_list_remove(rl_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = n;
}

#endif
