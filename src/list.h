/* SPDX-License-Identifier: MIT */
/* Intrusive doubly linked list (circular, with a sentinel head). Nodes are
 * embedded in the objects they link, so linking never allocates. */
#ifndef REDLEASE_LIST_H
#define REDLEASE_LIST_H
#include <stddef.h>

typedef struct rdl_list {
    struct rdl_list *prev, *next;
} rdl_list;

#define RDL_CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void rdl_list_init(rdl_list *h) { h->prev = h->next = h; }
static inline int rdl_list_empty(const rdl_list *h) { return h->next == h; }
/* A node that is in no list points to itself (after init or remove). */
static inline int rdl_list_linked(const rdl_list *n) { return n->next != n; }

static inline void rdl_list_push_back(rdl_list *h, rdl_list *n)
{
    n->prev = h->prev;
    n->next = h;
    h->prev->next = n;
    h->prev = n;
}

static inline void rdl_list_remove(rdl_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = n;
}

/* Moves every node of src to the back of dst, in order; src is left empty. */
static inline void rdl_list_move_all(rdl_list *dst, rdl_list *src)
{
    if (rdl_list_empty(src)) return;
    src->next->prev = dst->prev;
    dst->prev->next = src->next;
    src->prev->next = dst;
    dst->prev = src->prev;
    rdl_list_init(src);
}

#endif
