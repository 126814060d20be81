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

#define ARITY 4 /* half a binary heap's depth; a slot's children share a cache line */

static void place(rdl_heap *h, size_t i, rdl_heap_slot s)
{
    h->v[i] = s;
    s.x->idx = (uint32_t)i;
}

static void sift_up(rdl_heap *h, size_t i)
{
    rdl_heap_slot s = h->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / ARITY;
        if (h->v[parent].at <= s.at) break;
        place(h, i, h->v[parent]);
        i = parent;
    }
    place(h, i, s);
}

static void sift_down(rdl_heap *h, size_t i)
{
    rdl_heap_slot s = h->v[i];
    for (;;) {
        size_t first = ARITY * i + 1;
        if (first >= h->n) break;
        size_t end = first + ARITY < h->n ? first + ARITY : h->n, min = first;
        for (size_t c = first + 1; c < end; c++)
            if (h->v[c].at < h->v[min].at) min = c;
        if (h->v[min].at >= s.at) break;
        place(h, i, h->v[min]);
        i = min;
    }
    place(h, i, s);
}

int rdl_heap_insert(rdl_heap *h, rdl_heap_node *x, int64_t at)
{
    if (h->n >= RDL_HEAP_OUT - 1) {
        x->idx = RDL_HEAP_OUT;
        return REDLEASE_ENOMEM; /* idx is 32 bits: 4 billion deadlines at most */
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        rdl_heap_slot *v = rdl_realloc(h->v, cap * sizeof(*v));
        if (!v) {
            x->idx = RDL_HEAP_OUT;
            return REDLEASE_ENOMEM;
        }
        h->v = v;
        h->cap = cap;
    }
    x->at = at;
    place(h, h->n++, (rdl_heap_slot){at, x});
    sift_up(h, x->idx);
    return 0;
}

void rdl_heap_remove(rdl_heap *h, rdl_heap_node *x)
{
    size_t i = x->idx;
    if (i == RDL_HEAP_OUT) return;
    x->idx = RDL_HEAP_OUT;
    rdl_heap_slot last = h->v[--h->n];
    if (i == h->n) return;
    place(h, i, last);
    sift_up(h, i);
    sift_down(h, last.x->idx);
}

void rdl_heap_update(rdl_heap *h, rdl_heap_node *x, int64_t at)
{
    int64_t old = x->at;
    x->at = at;
    if (x->idx == RDL_HEAP_OUT) return;
    h->v[x->idx].at = at;
    if (at < old)
        sift_up(h, x->idx);
    else if (at > old)
        sift_down(h, x->idx);
}
