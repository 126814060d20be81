/* SPDX-License-Identifier: MIT */
/* The quorum (src/quorum.c): one lease over N independent Redis servers,
 * held while a majority (N/2 + 1) holds it (the Redlock scheme).
 *
 * To the lease state machine the quorum is one node (the client's main
 * node, which then has no address of its own: src/node.h sends its calls
 * here). Each request a lock submits is fanned out, with its one token,
 * to every member server that is ready (each a node of its own with its
 * own connection), and the members' answers are combined into the one
 * reply a single server would give, as soon as the outcome is certain:
 *
 *   acquire  yes from a majority: OK (fenced: the largest fence of those
 *            yes answers, every member's counter then raised to it); a
 *            majority no longer possible: busy if any
 *            member said busy, else the error
 *   renew    1 from a majority; 0 ("not ours") once a majority cannot say
 *            1 because members said 0; else the error
 *   release  1 once members holding a majority answered, or all did: 1 if
 *            any deleted the key, 0 if none did
 *
 * A semaphore's and a shared holder's scripts combine the same way (their
 * acquire's "not yet" is the queue's, -(ms left + 1)); each member admits
 * a semaphore up to the capacity the lock sends (docs/design.md, 12.3).
 *
 * An error the quorum makes up has the code QUORUM (transient,
 * REDLEASE_EQUORUM) and names the counts and the first member's error,
 * after that member's name; a definite error from more members than may
 * fail is passed on as is, the front's name (rdl_node_name) the member's
 * while the lock hears it.
 *
 * Clean-up it does itself, because only it knows which member said what:
 *  - an acquire that failed while its lock still waited for it, and a
 *    renewal that a majority denied, send compare-and-delete (the
 *    lease's kind's: rdl_script_release_of) to every
 *    member that said yes or has not answered (right behind the attempt
 *    on the same link, so it runs after it, and before anything the lock
 *    sends later);
 *    The quorum's own deletes go as EVAL: an EVALSHA answered NOSCRIPT
 *    would go again behind the lock's next attempt;
 *  - a release or drop owes compare-and-delete to members not ready when
 *    it went out, whose link took it, or that could not run it (a
 *    transient error): they get it first thing on their next connection,
 *    or ahead of the next command for them, until the key must have
 *    expired by itself.
 * An acquire the lock stopped waiting for is the lock's to clean up
 * (maybe_set, src/lock_send.c): a later attempt of the lock may already be on
 * the links behind it, and a delete now would land after that.
 *
 * A script goes as EVAL the first time on each member's link.
 * A clean-up answered with an error is not owed for later (the lock's
 * next attempt may be behind it on that link); a member still silent when
 * the lock has its answer gets the stall rule armed (src/conn.h).
 *
 * The quorum's epoch counts the times a member became ready: a member
 * back from a broken link (maybe a restarted server without our key)
 * makes every held lease renew at once, and held() is 0 until it has.
 */
#ifndef REDLEASE_QUORUM_H
#define REDLEASE_QUORUM_H

#include <stddef.h>
#include <stdint.h>

/* A quorum's fence: the largest counter of a majority's yes answers times
 * 16, plus the rank of a member that minted it (REDLEASE_MAX_QUORUM is
 * below 16). Each member mints each value once, so two holders at once (a
 * semaphore's, shared ones) never share a fence, though the counters,
 * raised to one another, often give them the same largest value; a later
 * holder's counter is larger, so its fence is too (docs/design.md, 10).
 * The rank is the member's place among the members sorted by host, then
 * port, not its place in quorum_addrs: clients that list the same servers
 * in different orders mark each server alike. */
#define RDL_QUORUM_FENCE_SPREAD 16
/* The largest counter that makes a fence: beyond, the fence would not fit
 * the 63 bits of Redis' integers (counters start near the server's clock
 * in microseconds, some 2^51: centuries of acquires away). */
#define RDL_QUORUM_COUNTER_MAX ((INT64_MAX - (RDL_QUORUM_FENCE_SPREAD - 1)) / RDL_QUORUM_FENCE_SPREAD)

#include "heap.h"
#include "list.h"
#include "req.h"
#include "svc.h"

struct rdl_node;

typedef struct rdl_quorum {
    rdl_svc *svc;
    struct rdl_node *front;   /* the node locks send to: its calls come here
                                 (rdl_node_via, registered by init) */
    struct rdl_node **member; /* n of them, nodes of the client */
    size_t n, need;           /* need: a majority, n / 2 + 1 */
    uint8_t rank[RDL_QUORUM_FENCE_SPREAD]; /* each member's place by address (fences) */
    uint64_t epoch;           /* bumped each time a member becomes ready */
    int64_t restart_guard;    /* quorum_restart_guard_ms: 0 the lease's TTL, < 0 none */
    uint32_t *owed_n;         /* per member: fan-outs owing it (rdl_qop.owed) */
    uint32_t *scripts;        /* per member: scripts sent on its link already
                                 (bit per RDL_SCRIPT_*), as of ... */
    uint64_t *scripts_epoch;  /* ... that member's connection */
    uint32_t settled;         /* members whose first connection is over (ready
                                 or failed): until all are, or the settling
                                 time passed (wake), the quorum is not ready,
                                 so a lease is not set on the first majority
                                 to connect and never on the rest */
    rdl_heap_node wake;       /* the settling time's end (RDL_WAKE_QUORUM) */
    rdl_list owing;           /* fan-outs owing compare-and-delete to members
                                 not ready (rdl_qop.link) */
    const struct rdl_node *speaker; /* while the lock hears a member's own
                                 answer passed on: that member (the front's
                                 rdl_node_name), else NULL */
} rdl_quorum;

/* A quorum over members (addresses already made nodes), with the
 * services svc, fronted by node front (a node with no server: the quorum
 * registers its calls on it); 0 or REDLEASE_ENOMEM. */
int rdl_quorum_init(rdl_quorum *q, rdl_svc *svc, struct rdl_node *front, struct rdl_node **members,
                    size_t n);
/* The loop is attached, the members start connecting: the settling time
 * (RDL_QUORUM_SETTLE_MS at most, a quarter of the command timeout, the
 * connect timeout) starts. */
#define RDL_QUORUM_SETTLE_MS 250
int64_t rdl_quorum_settle_time(int64_t connect_timeout, int64_t command_timeout);
/* From the client's timer at q->wake: the settling time is over. */
void rdl_quorum_run(rdl_quorum *q, int64_t now);
/* After the members' nodes were freed (their requests came back). */
void rdl_quorum_free(rdl_quorum *q);

/* The node calls (src/node.h) for the quorum's front node. */
int rdl_quorum_submit(rdl_quorum *q, rdl_req *req, int argc, const char **argv, const size_t *lens);
int rdl_quorum_ready(const rdl_quorum *q);
int64_t rdl_quorum_rtt_floor(const rdl_quorum *q);
int64_t rdl_quorum_server_ms(const rdl_quorum *q, int64_t now);
int rdl_quorum_refusal(const rdl_quorum *q);
int rdl_quorum_status(const rdl_quorum *q);
void rdl_quorum_note_timeout(rdl_quorum *q, int64_t sent_at, int64_t now);

/* A member node's reports (through the client: on_node_*, src/client.c):
 * ready, its link failed. (A
 * member's replies come back through its parts' own ops.) */
void rdl_quorum_member_ready(rdl_quorum *q, struct rdl_node *m);
void rdl_quorum_member_failed(rdl_quorum *q, struct rdl_node *m);

#endif
