/* SPDX-License-Identifier: MIT */
/* The commands of a lease (src/lease_cmd.h). A renewal and a
 * compare-and-delete go as the server's own conditional command where the
 * caller found one (rdl_conn_native): the same test and effect as the
 * script, without Lua. SET IFEQ never creates a missing key, as the
 * renewal script never does; on a key of another type both answer
 * WRONGTYPE, as the scripts' GET does. */
#include "lease_cmd.h"

#include <string.h>

#include "keys.h"
#include "scripts.h"
#include "token.h"

#define ARG(c, str, l) ((c)->argv[(c)->argc] = (str), (c)->lens[(c)->argc] = (l), (c)->argc++)

/* EVALSHA sha numkeys, or EVAL source numkeys. */
static void script_head(rdl_cmd *c, const rdl_cmd_spec *s, const char *numkeys)
{
    ARG(c, "EVALSHA", 7);
    ARG(c, rdl_script_sha(s->script), 40);
    if (s->eval) rdl_cmd_as_eval(c->argv, c->lens, s->script);
    ARG(c, numkeys, 1);
}

void rdl_cmd_as_eval(const char **argv, size_t *lens, int script)
{
    argv[0] = "EVAL";
    lens[0] = 4;
    argv[1] = rdl_script_src[script];
    lens[1] = strlen(argv[1]);
}

/* "TOKEN RECORD", what a mutex's key holds, into c->value; its length. */
static size_t value_with(rdl_cmd *c, const rdl_cmd_spec *s, uint64_t fence)
{
    if (s->who) return rdl_identity_value(s->who, s->token, s->at, fence, c->value);
    memcpy(c->value, s->token, RDL_TOKEN_LEN); /* nobody to name: the token alone */
    return RDL_TOKEN_LEN;
}

/* The value a held lease's key holds: with the fence its acquire minted. */
static size_t value(rdl_cmd *c, const rdl_cmd_spec *s) { return value_with(c, s, s->held_fence); }

/* An acquire's last argument: its record (src/identity.h), with no fence:
 * a fenced acquire's script writes the one it mints. */
static void record(rdl_cmd *c, const rdl_cmd_spec *s)
{
    if (!s->who) { /* nobody to name: an empty record (no acquire is made so) */
        ARG(c, "", 0);
        return;
    }
    size_t len = value_with(c, s, 0);
    ARG(c, c->value + RDL_TOKEN_LEN + 1, len - RDL_TOKEN_LEN - 1);
}

static void counter_ttl(rdl_cmd *c, const rdl_cmd_spec *s)
{
    ARG(c, c->counter_ttl, rdl_decimal(c->counter_ttl, s->ttl + RDL_FENCE_COUNTER_EXTRA_MS));
}

/* EVALSHA's head, the lock key, the n keys of these kinds derived from
 * it[, the fence key], then the token: what the queue's, a semaphore's
 * and a shared holder's scripts start with. */
static void script_keys(rdl_cmd *c, const rdl_cmd_spec *s, const int *kinds, int n, int fenced)
{
    static const char *const numkeys[] = {"1", "2", "3", "4", "5", "6"};
    script_head(c, s, numkeys[n + fenced]);
    ARG(c, s->key, s->keylen);
    for (int i = 0; i < n; i++) {
        rdl_key_derive(c->derived[i], s->key, s->keylen, kinds[i]);
        ARG(c, c->derived[i], rdl_key_derived_len(s->keylen, kinds[i]));
    }
    if (fenced) ARG(c, s->fence_key, s->fence_keylen);
    ARG(c, s->token, RDL_TOKEN_LEN);
}

static const int queue_keys[] = {REDLEASE_KEY_QUEUE, REDLEASE_KEY_WAITERS};
static const int shared_keys[] = {REDLEASE_KEY_QUEUE, REDLEASE_KEY_WAITERS, REDLEASE_KEY_HOLDERS,
                                  REDLEASE_KEY_WEIGHTS};

/* A waiting acquire's: its entry's life and claim, and its channel. */
static void waiting_args(rdl_cmd *c, const rdl_cmd_spec *s)
{
    ARG(c, c->life, rdl_decimal(c->life, s->life));
    ARG(c, c->claim, rdl_decimal(c->claim, s->claim));
    ARG(c, s->channel ? s->channel : "", s->channel_len);
}

/* The queue's scripts: KEYS key, queue, waiters[, fence key]; ARGV token
 * and (an acquire) its times and channel, then the order[, counter ttl]
 * (an acquire's), then an acquire's record. */
static void queue_script(rdl_cmd *c, const rdl_cmd_spec *s, size_t ttl_len)
{
    int acq = s->script == RDL_SCRIPT_QUEUE_ACQUIRE;
    int fenced = acq && s->fence_key;
    const char *order = s->unordered ? "0" : "1";
    script_keys(c, s, queue_keys, 2, fenced);
    if (acq) {
        ARG(c, c->ttl, ttl_len);
        waiting_args(c, s);
    }
    ARG(c, order, 1);
    if (fenced) counter_ttl(c, s);
    if (acq) record(c, s);
}

/* The scripts of a set of holders, a semaphore's or shared ones: KEYS the
 * kind (the lock key), then a semaphore's holders, weights and (but for
 * the renewal) the queue's two, or a shared holder's queue's two, holders
 * and weights[, fence key]; ARGV token, then an acquire's weight, limit
 * and capacity (a semaphore's), ttl and the entry's life, claim and
 * channel, a shared holder's order[, counter ttl] and the record, or the
 * renewal's limit (0: shared) and ttl. */
static const int sem_keys[] = {REDLEASE_KEY_HOLDERS, REDLEASE_KEY_WEIGHTS, REDLEASE_KEY_QUEUE,
                               REDLEASE_KEY_WAITERS};

static void holders_script(rdl_cmd *c, const rdl_cmd_spec *s, size_t ttl_len)
{
    int sem = s->script != RDL_SCRIPT_SHARED_ACQUIRE && s->script != RDL_SCRIPT_SHARED_RELEASE;
    int renew = s->script == RDL_SCRIPT_SEM_RENEW;
    int acq = s->script == RDL_SCRIPT_SEM_ACQUIRE || s->script == RDL_SCRIPT_SHARED_ACQUIRE;
    int fenced = acq && s->fence_key;
    script_keys(c, s, sem ? sem_keys : shared_keys, renew ? 2 : 4, fenced);
    if (renew || (acq && sem)) {
        if (acq) ARG(c, c->weight, rdl_decimal(c->weight, s->weight));
        ARG(c, c->limit, rdl_decimal(c->limit, s->limit));
        if (acq) ARG(c, c->capacity, rdl_decimal(c->capacity, s->capacity));
    }
    if (renew || acq) ARG(c, c->ttl, ttl_len);
    if (acq) waiting_args(c, s);
    if (!sem) ARG(c, s->unordered ? "0" : "1", 1); /* a shared holder's: how a free resource is given */
    if (fenced) counter_ttl(c, s);
    if (acq) record(c, s);
}

void rdl_cmd_encode(rdl_cmd *c, const rdl_cmd_spec *s)
{
    size_t ttl_len = rdl_decimal(c->ttl, s->ttl);
    int native = s->script == RDL_SCRIPT_RENEW || s->script == RDL_SCRIPT_RELEASE ? s->native : 0;
    c->argc = 0;
    if (native && s->script == RDL_SCRIPT_RENEW) { /* OK, or nil when not ours */
        size_t len = value(c, s);
        ARG(c, "SET", 3);
        ARG(c, s->key, s->keylen);
        ARG(c, c->value, len);
        ARG(c, "IFEQ", 4);
        ARG(c, c->value, len);
        ARG(c, "PX", 2);
        ARG(c, c->ttl, ttl_len);
    } else if (native & RDL_NATIVE_DELIFEQ) { /* 1 or 0, as the script */
        size_t len = value(c, s);
        ARG(c, "DELIFEQ", 7);
        ARG(c, s->key, s->keylen);
        ARG(c, c->value, len);
    } else if (native) {
        size_t len = value(c, s);
        ARG(c, "DELEX", 5);
        ARG(c, s->key, s->keylen);
        ARG(c, "IFEQ", 4);
        ARG(c, c->value, len);
    } else if (s->script < 0) {
        size_t len = value_with(c, s, 0); /* an acquire: no fence yet */
        ARG(c, "SET", 3);
        ARG(c, s->key, s->keylen);
        ARG(c, c->value, len);
        ARG(c, "NX", 2);
        ARG(c, "PX", 2);
        ARG(c, c->ttl, ttl_len);
    } else if (s->probe) { /* the queue release's two-key form (scripts.c) */
        script_keys(c, s, queue_keys, 1, 0);
    } else if (s->script == RDL_SCRIPT_QUEUE_ACQUIRE || s->script == RDL_SCRIPT_QUEUE_RELEASE) {
        queue_script(c, s, ttl_len);
    } else if (s->script >= RDL_SCRIPT_SEM_ACQUIRE && s->script <= RDL_SCRIPT_SHARED_RELEASE) {
        holders_script(c, s, ttl_len);
    } else if (s->script == RDL_SCRIPT_FENCE_RAISE) {
        script_head(c, s, "1");
        ARG(c, s->fence_key, s->fence_keylen);
        ARG(c, c->fence, rdl_decimal_u(c->fence, s->fence));
        counter_ttl(c, s);
    } else {
        int fenced = s->script == RDL_SCRIPT_ACQUIRE_FENCED;
        script_head(c, s, fenced ? "2" : "1");
        ARG(c, s->key, s->keylen);
        if (fenced) ARG(c, s->fence_key, s->fence_keylen);
        ARG(c, s->token, RDL_TOKEN_LEN);
        if (s->script != RDL_SCRIPT_RELEASE) ARG(c, c->ttl, ttl_len);
        if (fenced) counter_ttl(c, s);
        if (s->script == RDL_SCRIPT_ACQUIRE || fenced) record(c, s);
    }
}
