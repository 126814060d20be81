/* SPDX-License-Identifier: MIT */
/* The client's services (src/svc.c): the bottom of the engine, what every
 * layer above reads or calls, with nothing of theirs in it:
 *  - the clock, and the time one read of a connection or one timer pass
 *    holds (rdl_svc_now: the clock is read once per batch, not per reply);
 *  - the generator backoff delays are drawn from;
 *  - the deadline heap every connection, router, quorum and lock keeps
 *    its one deadline in (src/heap.h);
 *  - the loop and the transport factory new connections are made with;
 *  - the event hook (redlease_client_set_event_cb) and the last failure's
 *    text (redlease_client_errstr);
 *  - the nesting count that keeps user callbacks, timer arming and
 *    teardown out of the library's own frames.
 * It reaches the client, its owner, only through the rdl_svc_ops the
 * client registers. */
#ifndef REDLEASE_SVC_H
#define REDLEASE_SVC_H

#include <stddef.h>
#include <stdint.h>

#include "backoff.h"
#include "clock.h"
#include "heap.h"
#include "loop.h"
#include "redlease.h"
#include "transport.h"

typedef struct rdl_svc_ops {
    /* The outermost entry into the library left (rdl_svc_leave): the
     * owner arms its timer, or tears down a client freed meanwhile. */
    void (*idle)(void *owner);
} rdl_svc_ops;

typedef struct rdl_svc {
    rdl_clock clock;
    int64_t now_hint; /* what rdl_svc_now() answers while now_hinted */
    int now_hinted;
    rdl_xorshift xs; /* the default generator's state */
    rdl_rng rng;
    rdl_heap heap;
    rdl_loop loop; /* loop.ops NULL until a loop is attached */
    rdl_transport_factory transport_new; /* tests replace it */
    redlease_event_cb event_cb;
    void *event_arg;
    struct redlease_client *client; /* what the event hook is told */
    char errstr[384]; /* the last failure's text: a connection's or Redis's,
                         after the name of the server it came from */
    int depth;        /* nested entries into the library */
    int dead;         /* the client was freed: reports are accounted, not acted on */
    const rdl_svc_ops *ops;
    void *owner;
} rdl_svc;

/* Services for client (what events name), reporting to owner through ops;
 * the clock is CLOCK_MONOTONIC and the generator seeded from the OS until
 * replaced. The heap is empty and made by the caller (rdl_heap_init). */
void rdl_svc_init(rdl_svc *s, struct redlease_client *client, const rdl_svc_ops *ops, void *owner);

int64_t rdl_svc_now(const rdl_svc *s);
/* rdl_svc_now() answers now, without reading the clock, until restored:
 * the time the client's timer read for the locks it runs, or the time a
 * reply came (its connection read it for the round trip). Only while no
 * user code runs: rdl_svc_emit() forgets it before the event hook. saved
 * keeps what was set before (a reply reported inside a timer run). */
typedef struct rdl_now_saved {
    int64_t now;
    int hinted;
} rdl_now_saved;
void rdl_svc_hint(rdl_svc *s, int64_t now, rdl_now_saved *saved);
void rdl_svc_restore(rdl_svc *s, const rdl_now_saved *saved);

/* The event hook, if set and the client lives; the clock is read afresh
 * after it (user code takes time). */
void rdl_svc_emit(rdl_svc *s, const redlease_event *ev);
/* The last failure's text (NULL: none), cut to fit; node, when not NULL,
 * the server it came from (rdl_conn_name), goes ahead of it: "NODE: text".
 * Every text about one server is set with its name, here, once. */
void rdl_svc_set_errstr(rdl_svc *s, const char *node, const char *text, size_t len);

/* Brackets every entry into the library from outside (a transport's
 * report, the timer, an API call that may run callbacks); the outermost
 * leave calls the owner's idle. */
static inline void rdl_svc_enter(rdl_svc *s) { s->depth++; }
void rdl_svc_leave(rdl_svc *s);

#endif
