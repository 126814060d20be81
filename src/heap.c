/* SPDX-License-Identifier: MIT */
#include "heap.h"

#include "alloc.h"
#include "redlease.h"

void rdl_heap_init(rdl_heap *h)
{
    h->v = NULL;
    h->n = h->cap = 0;
}

void rdl_heap_free(rdl_heap *h)
{
    rdl_free(h->v);
    rdl_heap_init(h);
}

static void place(rdl_heap *h, size_t i, rdl_heap_node *x)
{
    h->v[i] = x;
    x->idx = (uint32_t)i;
}

static void sift_up(rdl_heap *h, size_t i)
{
    rdl_heap_node *x = h->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->v[parent]->at <= x->at) break;
        place(h, i, h->v[parent]);
        i = parent;
    }
    place(h, i, x);
}

static void sift_down(rdl_heap *h, size_t i)
{
    rdl_heap_node *x = h->v[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n) break;
        if (child + 1 < h->n && h->v[child + 1]->at < h->v[child]->at) child++;
        if (h->v[child]->at >= x->at) break;
        place(h, i, h->v[child]);
        i = child;
    }
    place(h, i, x);
}

int rdl_heap_insert(rdl_heap *h, rdl_heap_node *x, int64_t at)
{
    if (h->n >= RDL_HEAP_OUT - 1) {
        x->idx = RDL_HEAP_OUT;
        return REDLEASE_ENOMEM; /* idx is 32 bits: 4 billion deadlines at most */
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        rdl_heap_node **v = rdl_realloc(h->v, cap * sizeof(*v));
        if (!v) {
            x->idx = RDL_HEAP_OUT;
            return REDLEASE_ENOMEM;
        }
        h->v = v;
        h->cap = cap;
    }
    x->at = at;
    place(h, h->n++, x);
    sift_up(h, x->idx);
    return 0;
}

void rdl_heap_remove(rdl_heap *h, rdl_heap_node *x)
{
    size_t i = x->idx;
    if (i == RDL_HEAP_OUT) return;
    x->idx = RDL_HEAP_OUT;
    rdl_heap_node *last = h->v[--h->n];
    if (i == h->n) return;
    place(h, i, last);
    sift_up(h, i);
    sift_down(h, last->idx);
}

void rdl_heap_update(rdl_heap *h, rdl_heap_node *x, int64_t at)
{
    int64_t old = x->at;
    x->at = at;
    if (x->idx == RDL_HEAP_OUT) return;
    if (at < old)
        sift_up(h, x->idx);
    else if (at > old)
        sift_down(h, x->idx);
}
