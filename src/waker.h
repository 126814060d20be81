/* SPDX-License-Identifier: MIT */
/* The client's wake-up channel (src/waker.c): one subscriber connection
 * per client, subscribed to one channel of the client's own, shared by
 * every handle of the client that waits in a queue (docs/design.md,
 * section 11), and those waiting handles, found by token.
 *
 * A queue's scripts publish two words to a waiter's channel: "g TOKEN"
 * (the lock was handed to that waiter: it confirms at once) and "c TOKEN
 * MS" (check within MS ms: the waiter ahead was handed the lock and may
 * never confirm). Words are hints, never the truth: the lock key is, and
 * a waiter that hears nothing still checks on a timer bounded by the
 * holder's remaining TTL. What was published while the channel was not
 * subscribed is lost, so each new subscription tells the owner, and every
 * waiter checks at once.
 *
 * A waiter joins a queue only while the channel is subscribed
 * (rdl_waker_listening): a lock handed to a waiter nobody can tell would
 * sit out its claim time for nothing.
 *
 * Pure core like conn.c: no hiredis, time from the owner's clock, the
 * transport closed only from rdl_waker_run() and rdl_waker_free().
 */
#ifndef REDLEASE_WAKER_H
#define REDLEASE_WAKER_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "heap.h"
#include "list.h"
#include "token.h"

/* A waiting handle's place in the waker's table (kept in its acquire part). */
typedef struct rdl_waiter {
    rdl_list link;     /* its bucket; unlinked: not waiting here */
    const char *token; /* RDL_TOKEN_LEN hex digits: the handle's own (lk->token) */
    void *owner;       /* the handle, for the owner's word() */
} rdl_waiter;

/* What a word asks of a waiter. */
enum { RDL_WORD_GRANTED = 'g', RDL_WORD_CHECK = 'c' };

typedef struct rdl_waker_owner {
    /* As rdl_conn_owner's: bracket every report, and say when ending. */
    rdl_relay_ops relay;
    /* A word for w: check within ms (0 for a grant: the key says whether
     * the lock is its). When the channel is subscribed on a new link,
     * words published before were lost: every waiter gets 0 ms then. */
    void (*word)(void *owner, rdl_waiter *w, int64_t ms);
    /* The link failed: the owner may point it elsewhere (a Cluster's
     * other node) before it reconnects. */
    void (*link_lost)(void *owner);
    /* rdl_waker_deadline() moved. */
    void (*deadline)(void *owner, int64_t at);
    /* The channel is subscribed (status 0), or the subscription went with
     * its link or was refused (status, and the server's text if any). */
    void (*channel)(void *owner, int status, const char *text, size_t len);
} rdl_waker_owner;

typedef struct rdl_waker {
    rdl_relay relay;    /* first: the connection's brackets go to the owner */
    rdl_heap_node wake; /* the owner's heap node for the connection's deadline */
    const rdl_waker_owner *ops; /* the owner (relay.owner) is told through these */
    rdl_conn conn;
    rdl_req *sub;      /* the SUBSCRIBE, until its end comes back */
    int subscribed;    /* confirmed on the current link */
    int told_up;       /* the owner was told it is, and not yet that it went */
    char *channel;     /* key_prefix "wake:" and 32 random hex digits */
    size_t channel_len;
    rdl_list *buckets; /* waiters by token; NULL until the first */
    size_t nbuckets, count;
    uint64_t words;    /* words that found their waiter (tests, stats) */
} rdl_waker;

/* A waker on the server of base (its settings: credentials, TLS, timeouts),
 * IDLE: it connects when the first waiter comes. 0 or ENOMEM/ESYS (then
 * rdl_waker_free() still frees what was made). */
int rdl_waker_init(rdl_waker *k, const rdl_conn_config *base, const char *prefix, size_t prefix_len,
                   const rdl_waker_owner *ops, void *owner, rdl_clock *clock,
                   const rdl_rng *rng);
void rdl_waker_free(rdl_waker *k);
int rdl_waker_attach(rdl_waker *k, rdl_transport_factory make, struct rdl_loop *loop);
/* From the owner's timer: the deadline passed, or rdl_waker_due(). */
void rdl_waker_run(rdl_waker *k, int64_t now);
/* w (token set) waits for words from now on; the first waiter connects.
 * 0, or ENOMEM (no table: w does not wait here). */
int rdl_waker_add(rdl_waker *k, rdl_waiter *w, int64_t now);
/* w waits no more (harmless when it does not). */
static inline void rdl_waker_remove(rdl_waiter *w) { rdl_list_remove(&w->link); }
static inline int rdl_waker_has(const rdl_waiter *w) { return rdl_list_linked(&w->link); }
/* Words can reach a waiter now: the channel is subscribed. */
static inline int rdl_waker_listening(const rdl_waker *k) { return k->subscribed; }

static inline int rdl_waker_due(const rdl_waker *k) { return rdl_conn_due(&k->conn); }
static inline int64_t rdl_waker_deadline(const rdl_waker *k) { return rdl_conn_deadline(&k->conn); }

/* Reads a word ("g TOKEN" or "c TOKEN MS"): its kind, with the token's
 * digits in token and *ms (0 for a grant; at most REDLEASE_MAX_TTL_MS);
 * 0 for anything else. */
int rdl_waker_parse_word(const char *msg, size_t len, char token[RDL_TOKEN_LEN + 1], int64_t *ms);

#endif
