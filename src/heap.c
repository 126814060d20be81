#include "heap.h"

#include "alloc.h"
#include "redlease.h"

void rl_heap_init(rl_heap *h)
{
    h->v = NULL;
    h->n = h->cap = 0;
}

void rl_heap_free(rl_heap *h)
{
    rl_free(h->v);
    rl_heap_init(h);
}

static void place(rl_heap *h, size_t i, rl_heap_node *x)
{
    h->v[i] = x;
    x->idx = i;
}

static void sift_up(rl_heap *h, size_t i)
{
    rl_heap_node *x = h->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->v[parent]->at <= x->at) break;
        place(h, i, h->v[parent]);
        i = parent;
    }
    place(h, i, x);
}

static void sift_down(rl_heap *h, size_t i)
{
    rl_heap_node *x = h->v[i];
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

int rl_heap_insert(rl_heap *h, rl_heap_node *x, int64_t at)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        rl_heap_node **v = rl_realloc(h->v, cap * sizeof(*v));
        if (!v) {
            x->idx = RL_HEAP_OUT;
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

void rl_heap_remove(rl_heap *h, rl_heap_node *x)
{
    size_t i = x->idx;
    if (i == RL_HEAP_OUT) return;
    x->idx = RL_HEAP_OUT;
    rl_heap_node *last = h->v[--h->n];
    if (i == h->n) return;
    place(h, i, last);
    sift_up(h, i);
    sift_down(h, last->idx);
}

void rl_heap_update(rl_heap *h, rl_heap_node *x, int64_t at)
{
    int64_t old = x->at;
    x->at = at;
    if (x->idx == RL_HEAP_OUT) return;
    if (at < old)
        sift_up(h, x->idx);
    else if (at > old)
        sift_down(h, x->idx);
}
