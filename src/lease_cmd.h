/* SPDX-License-Identifier: MIT */
/* The commands of a lease, built in one place (src/lease_cmd.c): the
 * acquire (SET NX PX, or a script), the renewal and the compare-and-delete
 * (a script, or the server's own conditional command), the queue's
 * scripts, a semaphore's and a shared holder's, and a quorum's fence
 * raise. The lock layer (lock_send.c)
 * and the quorum (quorum.c, its own clean-up and fence raise) describe
 * what they want in an rdl_cmd_spec; neither writes an argument list.
 *
 * Pure: no hiredis, no lock or client here; the caller passes what the
 * command needs, and the result points into the rdl_cmd and the spec's
 * strings, so both must outlive the submit. */
#ifndef REDLEASE_LEASE_CMD_H
#define REDLEASE_LEASE_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "decimal.h"
#include "identity.h"
#include "redlease.h"

/* The most arguments a lease's command has: a semaphore's fenced acquire. */
#define RDL_CMD_MAX_ARGS 19
/* The longest key a lease derives (its queue's), with room to spare. */
#define RDL_CMD_KEY_MAX (REDLEASE_MAX_PREFIX + REDLEASE_MAX_RESOURCE + 16)

typedef struct rdl_cmd_spec {
    int script;      /* RDL_SCRIPT_*, or -1: the plain SET key token NX PX ttl */
    int native;      /* RDL_NATIVE_* for a renewal or a compare-and-delete:
                        the server's own command instead of the script (0: the script) */
    int eval;        /* a script goes as EVAL (its source), not EVALSHA */
    int probe;       /* RDL_SCRIPT_QUEUE_RELEASE in its two-key form (scripts.c) */
    int unordered;   /* the queue's scripts: a free lock goes to whoever asks */
    const char *key; /* the lock key, keylen bytes (any byte, NUL included) */
    size_t keylen;
    const char *token;     /* RDL_TOKEN_LEN bytes */
    /* Who holds (src/identity.h): an acquire writes its record, made of who
     * and at (the server's clock when the attempt was sent, ms; below 0:
     * not known), and a mutex's key holds "TOKEN RECORD", which the
     * server's own conditional commands compare whole (the scripts
     * compare the token); NULL for the commands that need neither (a
     * quorum's clean-up and fence raise) */
    const rdl_identity *who;
    int64_t at;
    uint64_t held_fence; /* the fence the lease's acquire minted, in its record (0: none) */
    const char *fence_key; /* a fenced acquire's or a fence raise's, or NULL */
    size_t fence_keylen;
    int64_t ttl;           /* ms */
    /* RDL_SCRIPT_QUEUE_ACQUIRE, _SEM_ACQUIRE, _SHARED_ACQUIRE: the entry's life and claim
     * time (ms) and the channel words reach the waiter on ("": it does not
     * queue) */
    int64_t life, claim;
    const char *channel;
    size_t channel_len;
    uint64_t fence;        /* RDL_SCRIPT_FENCE_RAISE: raise the counter to this */
    int32_t limit, weight; /* RDL_SCRIPT_SEM_ACQUIRE: the permits, this holder's share;
                              _SEM_RENEW: the limit (0: a shared holder) */
    int32_t capacity;      /* RDL_SCRIPT_SEM_ACQUIRE: what the server admits of limit */
} rdl_cmd_spec;

/* An encoded command: argv/lens, and the numbers and keys it points at. */
typedef struct rdl_cmd {
    int argc;
    const char *argv[RDL_CMD_MAX_ARGS];
    size_t lens[RDL_CMD_MAX_ARGS];
    char ttl[RDL_DECIMAL_MAX], counter_ttl[RDL_DECIMAL_MAX], life[RDL_DECIMAL_MAX],
        claim[RDL_DECIMAL_MAX], fence[RDL_DECIMAL_MAX], limit[RDL_DECIMAL_MAX],
        weight[RDL_DECIMAL_MAX], capacity[RDL_DECIMAL_MAX];
    char value[RDL_VALUE_MAX + 1]; /* "TOKEN RECORD": the record is what follows the space */
    /* a script's keys after the lock key, derived from it: the queue's
     * order and entries, then the holders and their weights */
    char derived[4][RDL_CMD_KEY_MAX];
} rdl_cmd;

/* Fills out with the command s describes. */
void rdl_cmd_encode(rdl_cmd *out, const rdl_cmd_spec *s);

/* Turns an encoded script call (EVALSHA sha ...) into its EVAL form
 * (EVAL source ...), in argv and lens: the same call after a NOSCRIPT, or
 * on a link where the script may not be cached yet. */
void rdl_cmd_as_eval(const char **argv, size_t *lens, int script);

#endif
