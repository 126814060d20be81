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

static void counter_ttl(rdl_cmd *c, const rdl_cmd_spec *s)
{
    ARG(c, c->counter_ttl, rdl_decimal(c->counter_ttl, s->ttl + RDL_FENCE_COUNTER_EXTRA_MS));
}

/* A script of the lock key and two keys of these kinds beside it[, the
 * fence key], then the token: the head the queue's and a semaphore's
 * scripts share. */
static void three_keys(rdl_cmd *c, const rdl_cmd_spec *s, int kind2, int kind3, int fenced)
{
    rdl_key_derive(c->key2, s->key, s->keylen, kind2);
    rdl_key_derive(c->key3, s->key, s->keylen, kind3);
    script_head(c, s, fenced ? "4" : "3");
    ARG(c, s->key, s->keylen);
    ARG(c, c->key2, rdl_key_derived_len(s->keylen, kind2));
    ARG(c, c->key3, rdl_key_derived_len(s->keylen, kind3));
    if (fenced) ARG(c, s->fence_key, s->fence_keylen);
    ARG(c, s->token, RDL_TOKEN_LEN);
}

/* The queue's scripts: KEYS key, queue, waiters[, fence key]; ARGV token
 * and (an acquire) its times and channel, then the order[, counter ttl]. */
static void queue_script(rdl_cmd *c, const rdl_cmd_spec *s, size_t ttl_len)
{
    int acq = s->script == RDL_SCRIPT_QUEUE_ACQUIRE;
    int fenced = acq && s->fence_key;
    const char *order = s->unordered ? "0" : "1";
    three_keys(c, s, REDLEASE_KEY_QUEUE, REDLEASE_KEY_WAITERS, fenced);
    if (acq) {
        ARG(c, c->ttl, ttl_len);
        ARG(c, c->life, rdl_decimal(c->life, s->life));
        ARG(c, c->claim, rdl_decimal(c->claim, s->claim));
        ARG(c, s->channel ? s->channel : "", s->channel_len);
    }
    ARG(c, order, 1);
    if (fenced) counter_ttl(c, s);
}

/* A semaphore's scripts: KEYS kind (the lock key), holders, weights[,
 * fence key]; ARGV token, then (an acquire) weight, limit, ttl[, counter
 * ttl], (a renewal) ttl. */
static void sem_script(rdl_cmd *c, const rdl_cmd_spec *s, size_t ttl_len)
{
    int acq = s->script == RDL_SCRIPT_SEM_ACQUIRE;
    int fenced = acq && s->fence_key;
    three_keys(c, s, REDLEASE_KEY_HOLDERS, REDLEASE_KEY_WEIGHTS, fenced);
    if (acq) {
        ARG(c, c->weight, rdl_decimal(c->weight, s->weight));
        ARG(c, c->limit, rdl_decimal(c->limit, s->limit));
    }
    if (s->script != RDL_SCRIPT_SEM_RELEASE) ARG(c, c->ttl, ttl_len);
    if (fenced) counter_ttl(c, s);
}

void rdl_cmd_encode(rdl_cmd *c, const rdl_cmd_spec *s)
{
    size_t ttl_len = rdl_decimal(c->ttl, s->ttl);
    int native = s->script == RDL_SCRIPT_RENEW || s->script == RDL_SCRIPT_RELEASE ? s->native : 0;
    c->argc = 0;
    if (native && s->script == RDL_SCRIPT_RENEW) { /* OK, or nil when not ours */
        ARG(c, "SET", 3);
        ARG(c, s->key, s->keylen);
        ARG(c, s->token, RDL_TOKEN_LEN);
        ARG(c, "IFEQ", 4);
        ARG(c, s->token, RDL_TOKEN_LEN);
        ARG(c, "PX", 2);
        ARG(c, c->ttl, ttl_len);
    } else if (native & RDL_NATIVE_DELIFEQ) { /* 1 or 0, as the script */
        ARG(c, "DELIFEQ", 7);
        ARG(c, s->key, s->keylen);
        ARG(c, s->token, RDL_TOKEN_LEN);
    } else if (native) {
        ARG(c, "DELEX", 5);
        ARG(c, s->key, s->keylen);
        ARG(c, "IFEQ", 4);
        ARG(c, s->token, RDL_TOKEN_LEN);
    } else if (s->script < 0) {
        ARG(c, "SET", 3);
        ARG(c, s->key, s->keylen);
        ARG(c, s->token, RDL_TOKEN_LEN);
        ARG(c, "NX", 2);
        ARG(c, "PX", 2);
        ARG(c, c->ttl, ttl_len);
    } else if (s->probe) { /* the queue release's two-key form (scripts.c) */
        rdl_key_derive(c->key2, s->key, s->keylen, REDLEASE_KEY_QUEUE);
        script_head(c, s, "2");
        ARG(c, s->key, s->keylen);
        ARG(c, c->key2, rdl_key_derived_len(s->keylen, REDLEASE_KEY_QUEUE));
        ARG(c, s->token, RDL_TOKEN_LEN);
    } else if (s->script == RDL_SCRIPT_QUEUE_ACQUIRE || s->script == RDL_SCRIPT_QUEUE_RELEASE) {
        queue_script(c, s, ttl_len);
    } else if (s->script == RDL_SCRIPT_SEM_ACQUIRE || s->script == RDL_SCRIPT_SEM_RENEW ||
               s->script == RDL_SCRIPT_SEM_RELEASE) {
        sem_script(c, s, ttl_len);
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
    }
}
