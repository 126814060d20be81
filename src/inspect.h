/* SPDX-License-Identifier: MIT */
/* Inspections in flight (src/inspect.c; redlease_inspect() in
 * include/redlease.h, docs/design.md, 14.1): each is one request per
 * server asked (the inspect script, RDL_SCRIPT_INSPECT, by EVALSHA, then
 * EVAL after NOSCRIPT), a deadline in the client's heap, and its callback,
 * owed once decided and run from the client's timer. A layer beside the
 * locks: the client hands it the nodes to ask (its own, the Cluster
 * node of the key's slot, or every quorum member, each directly: the
 * quorum's vote-counting is for writes), the router sends its requests
 * on after MOVED and ASK (rdl_req_ops' follow, resend, unsent), and what
 * it needs of the client (is a token one of its handles') it asks
 * through the rdl_inspect_owner table. Nothing of a lock is touched. */
#ifndef REDLEASE_INSPECT_H
#define REDLEASE_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "inspect_view.h"
#include "list.h"
#include "redlease.h"
#include "svc.h"

struct rdl_node;

/* What an inspection asks of its owner (the client). */
typedef struct rdl_inspect_owner {
    /* 1 when a handle of the client has token (NUL-terminated): a holder
     * or a waiter of its own; *permits its weight (a semaphore's). */
    int (*mine)(void *owner, const char *token, int64_t *permits);
} rdl_inspect_owner;

typedef struct rdl_inspects {
    rdl_svc *svc;
    const rdl_inspect_owner *ops;
    void *owner;
    int64_t command_timeout; /* each inspection's deadline from its start */
    rdl_list pending;        /* asking: their parts out or waiting for a node */
    rdl_list owed;           /* decided: their callbacks are due (from the timer) */
    rdl_list spent;          /* delivered, parts still on the wire (freed once back) */
} rdl_inspects;

void rdl_inspects_init(rdl_inspects *s, rdl_svc *svc, int64_t command_timeout,
                       const rdl_inspect_owner *ops, void *owner);
/* After every node was freed (their requests came back): frees what is
 * left, calling nobody. */
void rdl_inspects_free(rdl_inspects *s);

/* Starts an inspection of the keys under prefix (plen bytes) of resource
 * (rlen bytes, checked by the caller) on the n nodes given (one, or a
 * quorum's members; a majority is n / 2 + 1). A node not ready is
 * waited for, within the deadline, when wait is set; else (a quorum
 * whose majority is up) it counts at once as not answering. 0, or
 * REDLEASE_ENOMEM (nothing started, cb never runs). */
int rdl_inspect_start(rdl_inspects *s, const char *prefix, size_t plen, const char *resource,
                      size_t rlen, struct rdl_node *const *nodes, size_t n, int wait,
                      redlease_inspect_cb cb, void *arg);

/* A callback is owed: the client's timer should run now. */
static inline int rdl_inspect_owed(const rdl_inspects *s) { return !rdl_list_empty(&s->owed); }
/* Runs the first owed callback (the client's timer, one at a time: the
 * callback may free the client). */
void rdl_inspect_deliver(rdl_inspects *s);
/* From the client's timer at an inspection's deadline (kind
 * RDL_WAKE_INSPECT): what has not answered counts as silent. */
void rdl_inspect_expire(rdl_inspects *s, rdl_heap_node *wake, int64_t now);
/* Node n became ready: the requests waiting for it go. */
void rdl_inspect_node_ready(rdl_inspects *s, struct rdl_node *n, int64_t now);
/* Every inspection not delivered yet is cancelled: now (free: the
 * callbacks run before this returns), or from the timer (close: owed). */
void rdl_inspect_cancel_all(rdl_inspects *s, int now);
/* Inspection requests on n's wire (a graceful close waits for none). */
uint64_t rdl_inspect_out_on(const rdl_inspects *s, const struct rdl_node *n);

#endif
