/* SPDX-License-Identifier: MIT */
/* The lock layer: the lease state machine (src/lock_fsm.c) and its other
 * jobs, one file each and layered (lock_handle.c, lock_send.c, lock_fsm.c,
 * lock_reply.c, lock_api.c, each calling only those before it; they share
 * lock_int.h): a lock
 * handle, the set of a client's locks with what they use (rdl_locks), and
 * what the lock layer offers the client (src/client.c), which owns the
 * set, the timer and the nodes.
 * The lock layer sits above the targets it sends to (a node, the router,
 * the quorum's front node) and below the client: it reads no client, and
 * knows its target only by what the client registered (rdl_lock_target). */
#ifndef REDLEASE_LOCK_H
#define REDLEASE_LOCK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backoff.h"
#include "heap.h"
#include "identity.h"
#include "list.h"
#include "redlease.h"
#include "svc.h"
#include "token.h"
#include "waker.h"

struct rdl_node;
struct rdl_req;
struct rdl_reply;

/* What the target the locks go to offers. Its owner (the client, which
 * made the target and knows its topology) says so when it makes the set
 * (rdl_locks_init()); the lock layer's policy goes by these, each named
 * for what it means, and never asks which topology it is. */
typedef struct rdl_lock_target {
    /* The node a key's commands go to now (where its slot is served). */
    struct rdl_node *(*route)(void *arg, const char *key, size_t len);
    void *arg;
    unsigned ordered_queue : 1; /* one server keeps a resource's queue, so its
                                   waiters can be served in one order
                                   (REDLEASE_WAIT_QUEUE); without it they are
                                   woken and race (docs/design.md, 11.5) */
    unsigned replicas : 1;  /* a write lands on one primary, whose replicas
                                   can acknowledge it (WAIT, design 2.3) */
    unsigned release_probe : 1; /* a release may ask first whether a queue waits:
                                   the probe's -1 comes back as one server said it */
    unsigned split_votes : 1;   /* "busy" may be votes that split, with no holder
                                   whose release would tell a waiter: it backs
                                   off once (rdl_lock_queue_next_check) */
    unsigned moving_keys : 1;   /* keys move between servers (a Cluster's slots):
                                   a redirect that reaches the lock, not
                                   followed, is transient (the move ends) */
    /* The servers that each keep their own copy of a resource's holders,
     * and how many of them admit one (a quorum's members and majority; 1
     * and 1 for one server): a semaphore's servers admit less than its
     * limit when a holder needs fewer than all of them (docs/design.md,
     * 12.3). */
    uint8_t copies, need;
} rdl_lock_target;

/* A client's locks and what they use, embedded in the client (set by it
 * once, at creation): the services, where commands go, what the target
 * offers, the key prefix, the lists, the counters. */
typedef struct rdl_locks {
    rdl_svc *svc;
    const struct rdl_lock_fsm_ops *fsm; /* the state machine's entries the op
                                           engine below it calls (lock_int.h) */
    rdl_waker *waker;            /* the wake-up channel, or NULL */
    rdl_lock_target target;      /* what it offers (above) */
    char *prefix;                /* key_prefix */
    size_t prefix_len;
    int64_t command_timeout;     /* each lock operation's, and a close's */
    rdl_identity identity;       /* who this client's holders say they are */
    rdl_list locks, notify;      /* every handle; those owed callbacks */
    uint64_t parked; /* locks with lk->parked set (close waits for them) */
    uint64_t release_retries; /* releases waiting to retry (close waits for them);
                                 the lock layer keeps it with each lk->release_retry */
    redlease_stats stats; /* the locks' counters; the connections keep their own */
    int freeing;          /* redlease_client_free() is ending the handles */
    int closing;          /* redlease_client_close() called */
} rdl_locks;

enum rdl_lock_state {
    RDL_LOCK_ACQUIRING,
    RDL_LOCK_HELD,
    RDL_LOCK_RELEASING,
    RDL_LOCK_DONE /* failed, cancelled or lost: waits for redlease_release() */
};

/* Bits of lk->notify: callbacks owed to the user, run in this order. */
enum { RDL_NOTIFY_ACQUIRE = 1, RDL_NOTIFY_LOST = 2, RDL_NOTIFY_RELEASE = 4 };

/* What only the acquire needs: allocated with the handle, freed once
 * on_acquire has run, so a held lease carries none of it (a client may
 * hold a million; docs/design.md, section 5). */
struct rdl_lock_acq {
    redlease_acquire_cb on_acquire;
    rdl_backoff backoff;
    int64_t budget_end; /* no attempt starts after this */
    int max_attempts;
    uint32_t attempts;  /* attempts started */
    int last_status;    /* outcome of the last attempt that ended, or 0 */
    int status;         /* what on_acquire is told */
    /* queued (lk->queued): docs/design.md, section 11 */
    int joins;           /* waits in the queue (a wait budget); else one attempt */
    int queue_asked;     /* joins by the user's own wait_mode (REDLEASE_WAIT_QUEUE or
                            _WAKE), not the default's: no polling instead */
    int plain_next;      /* the queue's script met a moving slot (TRYAGAIN): the
                            next attempt is the one-key kind, which ASK serves */
    int in_queue;        /* the last attempt sent asked to wait in the queue
                            (a channel words can reach it on) */
    rdl_waiter waiter;   /* its place in the client's waker: words reach it */
    int64_t recheck_at;  /* a word came while an attempt was out: check by then */
    int64_t holder_left; /* the holder's remaining TTL the last attempt learnt, ms (0: unknown) */
    int split_backoff;   /* votes can split: the last check was a backoff after a split vote */
    int own_holder;      /* the last attempt found the resource busy while another
                            handle of this client held it (RDL_OWN_HOLDER_TEXT) */
};

/* What a contended attempt's events and redlease_client_errstr() say when
 * another handle of the same client holds the resource. */
#define RDL_OWN_HOLDER_TEXT "held by this client (another of its handles)"

/* Options few handles use: allocated only when one is set (a fence,
 * replicas to acknowledge, a hold cap, a semaphore, a shared holder), it
 * lives as long as the handle. */
struct rdl_lock_opts {
    int64_t max_hold, hold_until; /* hold_until: RDL_NEVER until held */
    uint64_t fence;               /* the fence minted, once held */
    int32_t min_replicas;         /* acknowledgement (WAIT/WAITAOF) after each write */
    int32_t replica_timeout;      /* its timeout, ms; 0: no acknowledgement */
    uint32_t fence_keylen;        /* the fence key follows the lock key's NUL */
    int32_t limit, weight;        /* a semaphore's permits and this holder's
                                     share; limit 0: not a semaphore */
    int32_t capacity;             /* what each server admits of limit
                                     (rdl_quorum_capacity) */
    uint8_t shared;               /* a shared holder */
    /* Re-entry (lock_join.c; docs/design.md, section 13): a lease's
     * handles are its first handle, which carries it (its token, its
     * requests, its deadlines), and those joined to it, which carry
     * nothing of their own. */
    uint8_t reentrant;            /* option: joins, and may be joined */
    uint8_t carried;              /* the first handle, released by its user while
                                     joined ones remain: it carries the lease for
                                     them and owes its user nothing more */
    uint32_t joined;              /* the first handle: handles joined to it now */
    struct redlease_lock *lease;  /* a joined handle: the first handle; else NULL */
    struct redlease_lock *handle; /* whose these are (the ring links options) */
    rdl_list sharers;             /* the first handle: the ring of those joined to
                                     it; a joined one: its link there */
};

/* The handle itself holds what a held lease needs, each field as narrow
 * as its range allows (REDLEASE_MAX_TTL_MS fits 32 bits). */
struct redlease_lock {
    rdl_locks *set;        /* its client's locks (lk->set->svc->client: the client) */
    struct rdl_node *node; /* where its commands go (src/node.h) */
    rdl_heap_node wake;  /* the lock's one deadline in the client's heap */
    rdl_list link;       /* c->locks */
    rdl_list notify_link; /* c->notify: callbacks owed */
    struct rdl_req *req; /* the op's request on the wire, or NULL */
    struct rdl_lock_acq *acq;   /* until on_acquire has run, then NULL */
    struct rdl_lock_opts *opts; /* NULL when no rarely used option is set */
    redlease_lost_cb on_lost;
    redlease_release_cb on_release;
    void *arg, *release_arg;

    /* the operation in progress (acquire attempt, renewal, release) */
    int64_t op_deadline;
    int64_t drop_until; /* a pending drop: after this the key has expired by itself */
    int64_t next_action; /* next attempt or renewal, or RDL_NEVER */
    int64_t at;          /* the server's clock when the last acquire attempt was
                            sent (-1: not known), in the record the key holds
                            (src/identity.h) */
    /* One field for two states: no handle needs both, and every held
     * lease would carry the one it does not need. */
    union {
        int64_t valid_until; /* HELD: the local validity deadline; read in no
                                other state */
        int64_t op_limit;    /* ACQUIRING, RELEASING: no op deadline beyond this
                                (the wait budget of an acquire, the first
                                deadline of a release); read through lock_send.c's
                                op_limit(), which is RDL_NEVER while HELD
                                (renewals run to the validity deadline) */
    };

    /* held */
    struct rdl_node *confirm_node; /* node whose connection last confirmed the lease */

    int32_t ttl;            /* ms, at most REDLEASE_MAX_TTL_MS */
    int32_t renew_interval; /* ms, or REDLEASE_RENEW_OFF */
    uint32_t refs;      /* requests in flight that point here */
    uint32_t confirm_epoch; /* confirm_node's connection then (its epoch's low
                               32 bits: 2^32 reconnects apart never meet) */
    uint16_t moves;     /* times a new Cluster map moved it (rdl_lock_move),
                           mod 2^16: a request is stale for a few command
                           timeouts, never 65536 moves */
    uint16_t keylen;    /* keys may hold any byte, NUL included; at most
                           REDLEASE_MAX_PREFIX + REDLEASE_MAX_RESOURCE + 8 */
    int8_t lost_reason, release_status; /* REDLEASE_LOST_*, REDLEASE_E* */
    unsigned state : 2;  /* enum rdl_lock_state; set by rdl_lock_set_state() only */
    unsigned op : 4;     /* RDL_REQ_ACQUIRE / RENEW / RELEASE or 0 */
    unsigned notify : 3; /* RDL_NOTIFY_* bits owed */
    unsigned user_ref : 1;      /* 1 until on_release has run (or the client ends) */
    unsigned release_called : 1;
    unsigned ended : 1;         /* ended by redlease_client_free() */
    unsigned fencing : 1;       /* option: mint a fence */
    unsigned maybe_set : 1;     /* an attempt may have written our key (sent,
                                   no answer or an answer not used): later
                                   attempts reclaim it, an acquire ending
                                   without a lease deletes it */
    unsigned op_cut : 1;        /* op_deadline is op_limit, before a command timeout */
    unsigned release_retry : 1; /* a release waits for its retry (counted in
                                   c->release_retries by set_release_retry()) */
    unsigned drop_pending : 1;  /* a compare-and-delete of our key is to be sent */
    unsigned wait_fsync : 1;    /* option: acknowledgement by WAITAOF */
    unsigned renewal_acks : 1;  /* option: renewals are acknowledged too */
    unsigned asking : 1;        /* node is where an ASK redirect sent the op; what
                                   goes there goes behind ASKING (node.h) */
    unsigned queued : 1;        /* REDLEASE_WAIT_QUEUE or _WAKE: its commands keep
                                   to the resource's queue, its release and drops
                                   hand the lock over (acq->joins: it waits in it) */
    unsigned met_queue : 1;     /* queued, and an attempt found the lock busy, or a
                                   release's probe found a queue: its release
                                   goes whole, not as the probe (scripts.c) */
    unsigned parked : 1;        /* has something to send and its node is not ready:
                                   sent when it is (client.c, on_node_flush); counted in
                                   c->parked. A bit, not a list link: 16 bytes
                                   of every held lease for a state few are in */
    unsigned value_unsure : 1;  /* a native compare said "not ours" and the script
                                   said ours: the key may hold our token with
                                   another record than the handle rebuilds, so
                                   its commands go as the scripts (lock_reply.c) */
    unsigned unordered : 1;     /* REDLEASE_WAIT_WAKE: a free lock goes to whoever
                                   asks first; a release tells the first waiter
                                   to check, hands nothing over */

    char token[RDL_TOKEN_LEN + 1];
    char key[]; /* lock key, NUL, then the fence key if fencing (src/keys.c) */
};

/* The rarely used options, read through here (none set: their defaults). */
static inline int64_t rdl_lock_hold_until(const struct redlease_lock *lk)
{
    return lk->opts ? lk->opts->hold_until : RDL_NEVER;
}
static inline int rdl_lock_min_replicas(const struct redlease_lock *lk)
{
    return lk->opts ? lk->opts->min_replicas : 0;
}
static inline int32_t rdl_lock_replica_timeout(const struct redlease_lock *lk)
{
    return lk->opts ? lk->opts->replica_timeout : 0;
}
/* A semaphore's permits, or 0 for another kind. */
static inline int32_t rdl_lock_limit(const struct redlease_lock *lk)
{
    return lk->opts ? lk->opts->limit : 0;
}
/* 1 for a shared holder. */
static inline int rdl_lock_shared(const struct redlease_lock *lk)
{
    return lk->opts && lk->opts->shared;
}
/* A handle joined to another's lease (re-entry). */
static inline int rdl_lock_joined(const struct redlease_lock *lk)
{
    return lk->opts && lk->opts->lease;
}
/* A lease's first handle that its user released while handles joined to
 * it still hold: it carries the lease for them. */
static inline int rdl_lock_carried(const struct redlease_lock *lk)
{
    return lk->opts && lk->opts->carried;
}
/* Two handles of one resource (the same lock key). */
static inline int rdl_lock_same_key(const struct redlease_lock *a, const struct redlease_lock *b)
{
    return a->keylen == b->keylen && memcmp(a->key, b->key, a->keylen) == 0;
}
/* The handle that carries lk's lease: its first handle, or lk itself. */
static inline const struct redlease_lock *rdl_lock_carrier(const struct redlease_lock *lk)
{
    return rdl_lock_joined(lk) ? lk->opts->lease : lk;
}
/* Asks the CPU for the handle's memory ahead of its use: with many leases
 * each is touched once per renewal interval, long out of cache by then,
 * and what a renewal or its reply reads spans the handle. Reads nothing;
 * lk may be any address. */
static inline void rdl_lock_prefetch(const struct redlease_lock *lk)
{
#if defined(__GNUC__) || defined(__clang__)
    const char *p = (const char *)lk;
    for (size_t off = 0; off < sizeof *lk + 32; off += 64) __builtin_prefetch(p + off, 1, 3);
#else
    (void)lk;
#endif
}

/* The fence key (fencing handles only, which always have opts). */
static inline const char *rdl_lock_fence_key(const struct redlease_lock *lk)
{
    return lk->key + lk->keylen + 1;
}

/* An empty set with the services svc, going to a target that offers what
 * target says (the client fills in the rest). */
void rdl_locks_init(rdl_locks *ls, rdl_svc *svc, const rdl_lock_target *target);
/* redlease_acquire_len() on the client's set (checks as it says). */
int rdl_lock_new(rdl_locks *ls, const char *resource, size_t rlen, const redlease_lock_options *o,
                 redlease_acquire_cb on_acquire, redlease_lost_cb on_lost, void *arg,
                 redlease_lock **out);

/* A word from the wake-up channel for a waiting handle (src/waker.h):
 * schedules its next attempt within ms (the key, not the word, says
 * whose the lock is), runs nothing else. */
void rdl_lock_word(rdl_waiter *w, int64_t ms, int64_t now);
/* The client's timer reached the lock's deadline (lk->wake). */
void rdl_lock_run(struct redlease_lock *lk, int64_t now);
/* Its node is ready: send what the lock parked (lk->parked). */
void rdl_lock_send_waiting(struct redlease_lock *lk, int64_t now);
/* Its node's connection became ready: a held lease not confirmed on it
 * renews at once. */
void rdl_lock_on_ready(struct redlease_lock *lk, int64_t now);
/* Its target routes the lock's key to node n now (a new Cluster map). */
void rdl_lock_move(struct redlease_lock *lk, struct rdl_node *n, int64_t now);
/* The server refused the connection for good (credentials, database): ops
 * waiting for a connection fail with status. */
void rdl_lock_on_refused(struct redlease_lock *lk, int status, int64_t now);
/* Runs the user callbacks the lock owes (it is on c->notify). */
void rdl_lock_deliver(struct redlease_lock *lk);
/* redlease_client_free(): the handle ends now, its callbacks run. */
void rdl_lock_end_by_client(struct redlease_lock *lk);
/* redlease_client_close(): stop acquiring, release what is held. */
void rdl_lock_close(struct redlease_lock *lk, int64_t now);
/* Frees the handle now: its last reference went, or the client ends. */
void rdl_lock_destroy(struct redlease_lock *lk);

#endif
