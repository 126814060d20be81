/* SPDX-License-Identifier: MIT */
#include "heap.h"

#include <string.h>

#include "alloc.h"
#include "redlease.h"

/* The heap is laid out as libev lays out its timers: the root sits at slot
 * HEAP0 = 3 of an array aligned to 64 bytes, so that the four children of
 * a slot (16 bytes each) fill exactly one cache line; slots 0..2 are never
 * used. A node's idx is its heap slot, or, with RUN_BIT, its run (two
 * bits) and its place in the run's ring (RUN_POS bits). */
#define ARITY 4
#define HEAP0 3
#define ALIGN 64
#define FIRST_CHILD(i) (ARITY * (i) - (ARITY * HEAP0 - HEAP0 - 1)) /* 4i - 8 */
#define PARENT(i) (((i) - HEAP0 - 1) / ARITY + HEAP0)

#define RUN_BIT 0x80000000u
#define RUN_SHIFT 28
#define RUN_POS 0x0FFFFFFFu
#define RUN_MAX_CAP (1u << RUN_SHIFT)
#define HEAP_MAX ((size_t)RUN_BIT - HEAP0 - 1)

void rdl_heap_init(rdl_heap *h) { memset(h, 0, sizeof *h); }

void rdl_heap_free(rdl_heap *h)
{
    rdl_free(h->mem);
    for (int r = 0; r < RDL_HEAP_RUNS; r++) rdl_free(h->run[r].v);
    rdl_heap_init(h);
}

/* ------------------------------------------------------------- the heap */

static inline void place(rdl_heap_slot *v, size_t i, rdl_heap_slot s)
{
    v[i] = s;
    s.x->idx = (uint32_t)i;
}

static void sift_up(rdl_heap *h, size_t i)
{
    rdl_heap_slot *v = h->v;
    rdl_heap_slot s = v[i];
    while (i > HEAP0) {
        size_t parent = PARENT(i);
        if (v[parent].at <= s.at) break;
        place(v, i, v[parent]);
        i = parent;
    }
    place(v, i, s);
}

static void sift_down(rdl_heap *h, size_t i)
{
    rdl_heap_slot *v = h->v;
    rdl_heap_slot s = v[i];
    size_t last = h->n + HEAP0 - 1; /* the last slot in use */
    for (;;) {
        size_t c = FIRST_CHILD(i);
        if (c > last) break;
        size_t min = c;
        int64_t at = v[c].at;
        if (c + ARITY - 1 <= last) { /* all four: one cache line */
            if (v[c + 1].at < at) min = c + 1, at = v[c + 1].at;
            if (v[c + 2].at < at) min = c + 2, at = v[c + 2].at;
            if (v[c + 3].at < at) min = c + 3, at = v[c + 3].at;
        } else {
            for (size_t k = c + 1; k <= last; k++)
                if (v[k].at < at) min = k, at = v[k].at;
        }
        if (at >= s.at) break;
        place(v, i, v[min]);
        i = min;
    }
    place(v, i, s);
}

/* Room for cap nodes in the heap, the array aligned (the allocator may be
 * the user's: no aligned allocation, a pointer moved into a larger one). */
static int heap_grow(rdl_heap *h, size_t cap)
{
    size_t slots = cap + HEAP0;
    if (slots > (SIZE_MAX - ALIGN) / sizeof(rdl_heap_slot)) return REDLEASE_ENOMEM;
    void *mem = rdl_malloc(slots * sizeof(rdl_heap_slot) + ALIGN);
    if (!mem) return REDLEASE_ENOMEM;
    rdl_heap_slot *v = (rdl_heap_slot *)(((uintptr_t)mem + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
    if (h->n) memcpy(v + HEAP0, h->v + HEAP0, h->n * sizeof *v);
    rdl_free(h->mem);
    h->mem = mem;
    h->v = v;
    h->cap = cap;
    return 0;
}

/* Never fails: the heap has room for every node (h->total). */
static void heap_push(rdl_heap *h, rdl_heap_node *x)
{
    size_t i = HEAP0 + h->n++;
    place(h->v, i, (rdl_heap_slot){x->at, x});
    sift_up(h, i);
}

static void heap_take(rdl_heap *h, size_t i)
{
    size_t last = HEAP0 + --h->n;
    if (i == last) return;
    rdl_heap_slot s = h->v[last];
    place(h->v, i, s);
    if (i > HEAP0 && h->v[PARENT(i)].at > s.at)
        sift_up(h, i);
    else
        sift_down(h, i);
}

/* ------------------------------------------------------------- the runs */

static inline uint32_t run_idx(int r, uint32_t pos) { return RUN_BIT | (uint32_t)r << RUN_SHIFT | pos; }

/* The run that takes a deadline at: the one whose newest is the latest
 * not after it (so each kind of deadline keeps to its run), else an empty
 * one; -1 if none. */
static int run_for(const rdl_heap *h, int64_t at)
{
    int best = -1, empty = -1;
    for (int r = 0; r < RDL_HEAP_RUNS; r++) {
        const rdl_heap_run *run = &h->run[r];
        if (run->head == run->tail) {
            if (empty < 0 || (!h->run[empty].cap && run->cap)) empty = r;
        } else if (run->last <= at && (best < 0 || run->last > h->run[best].last)) {
            best = r;
        }
    }
    return best >= 0 ? best : empty;
}

/* The ring made over with its live entries at its start, the dead dropped
 * (their nodes told where they are now): twice as large when more than
 * half of it is live, else as large, so slots left by nodes that moved do
 * not make it grow. 0, or REDLEASE_ENOMEM (the run is as it was). */
static int run_grow(rdl_heap_run *run, int r)
{
    uint32_t live = 0, mask = run->cap - 1;
    for (uint32_t i = run->head; i != run->tail; i++) live += run->v[i & mask].x != NULL;
    uint32_t cap = !run->cap ? 64 : live > run->cap / 2 ? run->cap * 2 : run->cap;
    if (cap > RUN_MAX_CAP) return REDLEASE_ENOMEM;
    rdl_heap_slot *v = rdl_malloc((size_t)cap * sizeof *v);
    if (!v) return REDLEASE_ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = run->head; i != run->tail; i++) {
        rdl_heap_slot s = run->v[i & mask];
        if (!s.x) continue;
        v[n] = s;
        s.x->idx = run_idx(r, n);
        n++;
    }
    rdl_free(run->v);
    run->v = v;
    run->cap = cap;
    run->head = 0;
    run->tail = n;
    return 0;
}

/* Appends x (its deadline no earlier than the run's newest); 0, or
 * REDLEASE_ENOMEM when the ring is full and cannot grow. */
static int run_append(rdl_heap *h, int r, rdl_heap_node *x)
{
    rdl_heap_run *run = &h->run[r];
    if (run->tail - run->head == run->cap && run_grow(run, r)) return REDLEASE_ENOMEM;
    uint32_t pos = run->tail++ & (run->cap - 1);
    run->v[pos] = (rdl_heap_slot){x->at, x};
    run->last = x->at;
    x->idx = run_idx(r, pos);
    return 0;
}

/* Takes x out of its run: its slot is dead, and the oldest and the newest
 * entries stay nodes' (dead ones at either end go). */
static void run_take(rdl_heap *h, rdl_heap_node *x)
{
    rdl_heap_run *run = &h->run[(x->idx >> RUN_SHIFT) & 3];
    uint32_t mask = run->cap - 1;
    run->v[x->idx & RUN_POS].x = NULL;
    while (run->head != run->tail && !run->v[run->head & mask].x) run->head++;
    while (run->head != run->tail && !run->v[(run->tail - 1) & mask].x) run->tail--;
    if (run->head != run->tail) run->last = run->v[(run->tail - 1) & mask].at;
}

/* x, in neither, goes where its deadline (x->at) fits: a run, else the heap. */
static void put(rdl_heap *h, rdl_heap_node *x)
{
    if (x->at != RDL_NEVER) { /* never due: the heap keeps them at its bottom */
        int r = run_for(h, x->at);
        if (r >= 0 && run_append(h, r, x) == 0) return;
    }
    heap_push(h, x);
}

/* ------------------------------------------------------------ the API */

int rdl_heap_insert(rdl_heap *h, rdl_heap_node *x, int64_t at)
{
    if (h->total >= HEAP_MAX) {
        x->idx = RDL_HEAP_OUT;
        return REDLEASE_ENOMEM;
    }
    if (h->total == h->cap && heap_grow(h, h->cap ? h->cap * 2 : 16)) {
        x->idx = RDL_HEAP_OUT;
        return REDLEASE_ENOMEM;
    }
    h->total++;
    x->at = at;
    put(h, x);
    return 0;
}

static void take(rdl_heap *h, rdl_heap_node *x)
{
    if (x->idx & RUN_BIT)
        run_take(h, x);
    else
        heap_take(h, x->idx);
}

void rdl_heap_remove(rdl_heap *h, rdl_heap_node *x)
{
    if (x->idx == RDL_HEAP_OUT) return;
    take(h, x);
    x->idx = RDL_HEAP_OUT;
    h->total--;
}

void rdl_heap_update(rdl_heap *h, rdl_heap_node *x, int64_t at)
{
    int64_t old = x->at;
    x->at = at;
    if (x->idx == RDL_HEAP_OUT || at == old) return;
    if (x->idx & RUN_BIT) {
        run_take(h, x);
        put(h, x);
        return;
    }
    /* In the heap: into a run if one takes it, else moved where it is. */
    size_t i = x->idx;
    int r = at != RDL_NEVER ? run_for(h, at) : -1;
    if (r >= 0) {
        rdl_heap_run *run = &h->run[r];
        if (run->tail - run->head < run->cap || run_grow(run, r) == 0) {
            heap_take(h, i);
            run_append(h, r, x); /* has room */
            return;
        }
    }
    h->v[i].at = at;
    if (at < old)
        sift_up(h, i);
    else
        sift_down(h, i);
}

rdl_heap_node *rdl_heap_second(const rdl_heap *h, int64_t *at)
{
    rdl_heap_node *top = rdl_heap_top(h);
    if (!top) return NULL;
    if (top->idx & RUN_BIT) {
        const rdl_heap_run *run = &h->run[(top->idx >> RUN_SHIFT) & 3];
        uint32_t next = run->head + 1;
        if (next == run->tail) return NULL;
        *at = run->v[next & (run->cap - 1)].at;
        return run->v[next & (run->cap - 1)].x; /* NULL: a node that left */
    }
    size_t end = h->n < 5 ? h->n + HEAP0 : 8; /* the root's children: v[4..7] */
    if (end <= 4) return NULL;
    size_t min = 4;
    for (size_t i = 5; i < end; i++)
        if (h->v[i].at < h->v[min].at) min = i;
    *at = h->v[min].at;
    return h->v[min].x;
}
