/* SPDX-License-Identifier: MIT */
/* What an inspection shows (src/inspect_view.c; man 3 redlease,
 * INSPECTION; docs/design.md, 14.1): the view of one server's answer to
 * the inspect script (RDL_SCRIPT_INSPECT), and the tally of several
 * servers' views under a quorum. Pure: no client, no connection, no
 * hiredis; it reads rdl_reply trees, so redlease(1) can read its own
 * answers with it. The view is the public redlease_inspection, read by the
 * accessors of include/redlease.h. */
#ifndef REDLEASE_INSPECT_VIEW_H
#define REDLEASE_INSPECT_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "identity.h"
#include "redlease.h"
#include "transport.h"

/* The longest token shown: ours are 32 hex digits; another writer's value
 * is cut here (and cleaned as a host name is). */
#define RDL_INSPECT_TOKEN_MAX 64

/* A holder or a waiter, with the strings its public struct points at
 * (rdl_inspect_finish sets the pointers, once the arrays stop moving). */
typedef struct rdl_inspect_holder {
    redlease_holder pub;
    char token[RDL_INSPECT_TOKEN_MAX + 1];
    char host[RDL_HOST_MAX + 1];
    char label[REDLEASE_MAX_LABEL + 1];
    int64_t left[REDLEASE_MAX_QUORUM]; /* tally: ttl_ms on each server (-1: none) */
} rdl_inspect_holder;

typedef struct rdl_inspect_waiter {
    redlease_waiter pub;
    char token[RDL_INSPECT_TOKEN_MAX + 1];
    char host[RDL_HOST_MAX + 1];
    char label[REDLEASE_MAX_LABEL + 1];
} rdl_inspect_waiter;

struct redlease_inspection {
    int kind;               /* enum redlease_kind */
    int limit;              /* a semaphore's */
    uint64_t fence_counter;
    int64_t now;            /* the server's clock, ms (0: not known) */
    int servers, answered;  /* asked, answered (1 and 1 for one server's view) */
    rdl_inspect_holder *holders;
    size_t nholders, capholders;
    rdl_inspect_waiter *waiters;
    size_t nwaiters, capwaiters;
};

/* Reads one server's answer r to the inspect script into v (zeroed
 * first): 0, REDLEASE_EPROTO for an answer of another shape, or
 * REDLEASE_ENOMEM. v owns its arrays either way (rdl_inspect_clear). */
int rdl_inspect_parse(const rdl_reply *r, redlease_inspection *v);
/* The quorum's view of n servers' views (NULL: that server did not
 * answer) into out (zeroed first), counted as redlease(1) status counts
 * them: a mutex's holder holds when a majority (n / 2 + 1) holds its
 * token; a semaphore's or a shared holder, when a majority admits it; its
 * ttl_ms the majority-th longest of theirs. Waiters are those of every
 * server that answered, in the order the first to list each lists them.
 * *cannot_tell: no holder by a majority, and the servers that did not
 * answer could make one. With one server, its view as it is. 0 or
 * REDLEASE_ENOMEM. */
int rdl_inspect_tally(redlease_inspection *out, redlease_inspection *const *views, int n,
                      int *cannot_tell);
/* The mutex's holder that most of n servers hold, as rdl_inspect_tally
 * finds it: tokens[i] is server i's holder (NULL: none), ttls[i] its
 * ttl_ms there (-1: no expiry). Returns how many servers hold the token
 * most hold (0: none), *first the first of them (-1: none), and, when
 * they are a majority (n / 2 + 1), *ttl the majority-th longest of their
 * ttls (else -1; -1 too for no expiry). n at most REDLEASE_MAX_QUORUM. */
int rdl_inspect_most_held(const char *const *tokens, const int64_t *ttls, int n, int *first,
                          int64_t *ttl);
/* Points each holder's and waiter's public struct at its strings: after
 * the last change to the arrays, before the view is read. */
void rdl_inspect_finish(redlease_inspection *v);
/* Frees what v holds (not v). */
void rdl_inspect_clear(redlease_inspection *v);

#endif
