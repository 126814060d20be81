/* SPDX-License-Identifier: MIT */
/* The Lua scripts a lease needs. Each goes by EVALSHA under its SHA-1
 * (rdl_script_sha), and by EVAL once when the server answers NOSCRIPT
 * (cold or flushed script cache; EVAL fills it). */
#ifndef REDLEASE_SCRIPTS_H
#define REDLEASE_SCRIPTS_H

/* A mutex's acquires (the first three here, and the queue's) and a shared
 * holder's answer an error "KIND a semaphore of N permits" when the
 * resource is one. */
enum rdl_script {
    RDL_SCRIPT_ACQUIRE,        /* KEYS: key; ARGV: token, ttl -> 1 ours now, 0 held by another */
    RDL_SCRIPT_ACQUIRE_FENCED, /* KEYS: key, fence key; ARGV: token, ttl, counter ttl
                                  -> fence, or 0 held by another */
    RDL_SCRIPT_RENEW,          /* KEYS: key; ARGV: token, ttl -> 1 extended, 0 not ours */
    RDL_SCRIPT_RELEASE,        /* KEYS: key; ARGV: token -> 1 deleted, 0 not ours */
    RDL_SCRIPT_FENCE_RAISE,    /* KEYS: fence key; ARGV: fence, counter ttl -> 1 raised,
                                  0 already as high (a quorum's, src/quorum.c) */
    /* A queued acquire (docs/design.md, section 11). KEYS: key, queue,
     * waiters[, fence key]; ARGV: token, ttl, entry life ms, claim ms,
     * channel ("": do not queue), order ("1": FIFO, "0": a free lock goes
     * to whoever asks first)[, counter ttl] -> n > 0 ours now (the fence
     * when fenced, else 1), or n <= 0 waiting: -n is the holder's
     * remaining TTL in ms, rounded up (0 when not known) */
    RDL_SCRIPT_QUEUE_ACQUIRE,
    /* A queued handle's release, drop and leaving the queue. KEYS: key,
     * queue, waiters; ARGV: token, order ("1": the live head is handed
     * the lock and told; "0": the first waiter is told to check, and
     * races) -> 1 deleted, 0 not ours */
    RDL_SCRIPT_QUEUE_RELEASE,
    /* The holders' scripts, from here to RDL_SCRIPT_SHARED_RELEASE, stay
     * together: lease_cmd.c builds them by one function, by this range.
     * A counting semaphore's holder (docs/design.md, section 12). KEYS:
     * kind, holders, weights, queue, waiters[, fence key]; ARGV: token,
     * weight, limit, capacity (what this server admits of the limit),
     * ttl, entry life ms, claim ms, channel ("": do not queue)[, counter
     * ttl] -> n > 0 admitted (the fence when fenced, else
     * 1), or n < 0 not yet (full, or a waiter ahead): -n - 1 ms until the
     * first holder's deadline; an error "KIND what the resource is" when
     * it is another kind or limit */
    RDL_SCRIPT_SEM_ACQUIRE,
    /* A semaphore's or a shared lease's holder. KEYS: kind, holders,
     * weights; ARGV: token, limit (0: shared), ttl -> 1 extended, 0 not a
     * holder of that kind (never re-added) */
    RDL_SCRIPT_SEM_RENEW,
    /* KEYS: kind, holders, weights, queue, waiters; ARGV: token -> 1
     * released, 0 not a holder (a waiter's drop: out of the queue too) */
    RDL_SCRIPT_SEM_RELEASE,
    /* A shared holder (docs/design.md, 12.4). KEYS: kind, queue, waiters,
     * holders, weights[, fence key]; ARGV: token, ttl, entry life ms,
     * claim ms, channel ("": do not queue), order ("1": a free resource is
     * handed to an exclusive head; "0": the head is told)[, counter ttl] -> n > 0
     * admitted (the fence when fenced, else 1), or n < 0 not yet (an
     * exclusive holder, or a waiter ahead): -n - 1 ms of the kind key's
     * TTL left; an error "KIND ..." for a semaphore */
    RDL_SCRIPT_SHARED_ACQUIRE,
    /* KEYS: kind, queue, waiters, holders, weights; ARGV: token, order
     * (as the acquire's) -> 1 released, 0 not a holder (a waiter's drop:
     * out of the queue too) */
    RDL_SCRIPT_SHARED_RELEASE,
    /* Reads, writes nothing (src/inspect.c). KEYS: lock, fence, holders,
     * weights, queue, waiters -> [PTTL lock, GET lock, GET fence, TIME,
     * ZRANGE holders WITHSCORES, HGETALL weights, ZRANGE queue, HGETALL
     * waiters]: every key of a resource at one instant (src/inspect_view.h
     * reads it) */
    RDL_SCRIPT_INSPECT,
    RDL_SCRIPT_COUNT
};

extern const char *const rdl_script_src[RDL_SCRIPT_COUNT];

/* An acquire that may wait (the queue's, a semaphore's, a shared
 * holder's): its "not yet" is -(ms a holder has left + 1), and with a
 * fence key it mints a fence. */
static inline int rdl_script_waits(int s)
{
    return s == RDL_SCRIPT_QUEUE_ACQUIRE || s == RDL_SCRIPT_SEM_ACQUIRE || s == RDL_SCRIPT_SHARED_ACQUIRE;
}

/* The compare-and-delete for a lease of script s's kind (limit: a
 * semaphore's, 0 for the other kinds): a semaphore's or a shared holder's
 * own, else the mutex's. */
static inline int rdl_script_release_of(int s, int limit)
{
    if (s < RDL_SCRIPT_SEM_ACQUIRE || s > RDL_SCRIPT_SHARED_RELEASE) return RDL_SCRIPT_RELEASE;
    return limit ? RDL_SCRIPT_SEM_RELEASE : RDL_SCRIPT_SHARED_RELEASE;
}

/* The SHA-1 of rdl_script_src[i], 40 lowercase hex digits: the name the
 * server caches the script under. */
const char *rdl_script_sha(int i);

/* The server's own conditional commands that do a script's work without
 * Lua (bits; a connection asks its server which it has: rdl_conn_native). */
enum {
    RDL_NATIVE_DELIFEQ = 1, /* Valkey >= 9.0: DELIFEQ key value; it has SET IFEQ too */
    RDL_NATIVE_DELEX = 2    /* Redis >= 8.4: DELEX key IFEQ value; it has SET IFEQ too */
};

/* How long the fence counter outlives the last acquire that used it, beyond
 * the lease's TTL (ms): see RDL_SCRIPT_ACQUIRE_FENCED. */
#define RDL_FENCE_COUNTER_EXTRA_MS 600000

#endif
