/* SPDX-License-Identifier: MIT */
/* What a lock sends, and when (src/lock_int.h): which command each
 * request is (its script, the queue's arguments: src/lease_cmd.h builds
 * it), the queue's timing policy (how long an entry lives, when a waiter
 * checks again), the op engine (one operation at a time, its deadline,
 * a pending drop first, the node it goes to), and the tickets for replica
 * acknowledgement. What it must tell the state machine above it goes
 * through the set's rdl_lock_fsm_ops. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "acks.h"
#include "alloc.h"
#include "errors.h"
#include "keys.h"
#include "lease_cmd.h"
#include "lease_math.h"
#include "lock_int.h"
#include "node.h"
#include "options.h"
#include "scripts.h"

/* The lock's server refuses scripts (src/conn.h): a mutex's lease goes by
 * the server's own commands (SET NX PX, SET IFEQ, DELIFEQ or DELEX), its
 * waits poll (the queue is scripts: by default only; one that asked for
 * the queue fails, its fairness never dropped silently), and every attempt of an acquire
 * writes one value, which a drop then deletes by its own compare (a
 * script would compare the token alone). docs/design.md, section 15. */
static int scriptless(const struct redlease_lock *lk) { return rdl_node_scripts_off(lk->node); }

/* What a request would need a script for on a server that refuses them:
 * the status (REDLEASE_ENOTSUP, the error text saying what is missing),
 * or 0 when it can go without. */
static int needs_scripts(struct redlease_lock *lk, int kind)
{
    if (!scriptless(lk)) return 0;
    int acquire = kind == RDL_REQ_ACQUIRE;
    const char *what = lk->node->via ? "a quorum's lease needs Lua scripts on a majority of its servers"
                       : rdl_lock_limit(lk)                 ? "a semaphore's lease needs Lua scripts"
                       : rdl_lock_shared(lk)                ? "a shared lease needs Lua scripts"
                       : lk->fencing && acquire ? "a fencing token needs Lua scripts"
                       : acquire && lk->acq && lk->acq->queue_asked
                           ? "queued waiting (wait_mode REDLEASE_WAIT_QUEUE or _WAKE) needs Lua scripts"
                       : !acquire && lk->value_unsure
                           ? "a lease whose value on the server is not known (src/identity.h) needs Lua scripts"
                       : !rdl_node_native(lk->node)
                           ? "a safe release needs Lua scripts, or DELIFEQ (Valkey >= 9.0) or DELEX (Redis >= 8.4)"
                           : NULL;
    if (!what) return 0;
    char text[320];
    int n = snprintf(text, sizeof text, "%s, and %s (%s)", what,
                     lk->node->via ? "too many of them refuse scripts" : "the server refuses scripts",
                     rdl_node_scripts_why(lk->node));
    rdl_svc_set_errstr(lk->set->svc, rdl_node_name(lk->node), text, n > 0 ? (size_t)n : 0);
    return REDLEASE_ENOTSUP;
}

/* Which script a request runs, or -1 for the plain SET NX PX. */
static int script_for(const struct redlease_lock *lk, int kind)
{
    /* a semaphore's and a shared holder's: each acquire reclaims its own
     * token; both renew in their set of holders */
    if (rdl_lock_limit(lk) || rdl_lock_shared(lk)) {
        int sem = rdl_lock_limit(lk) != 0;
        return kind == RDL_REQ_ACQUIRE ? (sem ? RDL_SCRIPT_SEM_ACQUIRE : RDL_SCRIPT_SHARED_ACQUIRE)
               : kind == RDL_REQ_RENEW ? RDL_SCRIPT_SEM_RENEW
               : sem                   ? RDL_SCRIPT_SEM_RELEASE
                                       : RDL_SCRIPT_SHARED_RELEASE;
    }
    switch (kind) {
    case RDL_REQ_ACQUIRE:
        if (scriptless(lk)) return -1;
        if (lk->acq->joins && !lk->acq->plain_next) return RDL_SCRIPT_QUEUE_ACQUIRE;
        if (lk->fencing) return RDL_SCRIPT_ACQUIRE_FENCED;
        /* Only a later attempt, or one sent again (a Cluster move), can
         * meet a key of its own making. */
        return lk->acq->attempts > 1 || lk->maybe_set ? RDL_SCRIPT_ACQUIRE : -1;
    case RDL_REQ_RENEW: return RDL_SCRIPT_RENEW;
    default: /* the release and drops */
        return lk->queued && !scriptless(lk) ? RDL_SCRIPT_QUEUE_RELEASE : RDL_SCRIPT_RELEASE;
    }
}

/* A queued waiter's entry lives this long from each check (which comes at
 * least every third of it): a waiter that died leaves the queue by then.
 * At least a second, so a short lease does not make waiters poll. */
#define RDL_QUEUE_LIFE_MIN_MS 1000

static int64_t queue_life(const struct redlease_lock *lk)
{
    return lk->ttl > RDL_QUEUE_LIFE_MIN_MS ? lk->ttl : RDL_QUEUE_LIFE_MIN_MS;
}

/* How long a lock handed to this waiter waits for its confirmation: one
 * command's time, the lease's at most. A waiter that never confirms costs
 * the queue this much. */
static int64_t queue_claim(const struct redlease_lock *lk)
{
    return rdl_min64(lk->ttl, lk->set->command_timeout);
}

/* The channel the queue tells this waiter on, or "" while no word could
 * reach it (the waker not subscribed): it then does not join the queue. */
static const char *queue_channel(const struct redlease_lock *lk, size_t *len)
{
    const rdl_waker *k = lk->set->waker;
    /* lk->acq is gone once on_acquire ran: an attempt resent after that
     * (NOSCRIPT -> EVAL) is stale, and joins nothing */
    if (lk->acq && rdl_waker_has(&lk->acq->waiter) && rdl_waker_listening(k)) {
        *len = k->channel_len;
        return k->channel;
    }
    *len = 0;
    return "";
}

/* When a queued waiter told "busy" checks again: when the holder's lease
 * would end (a lock that expired without a release is handed over then),
 * when a word said to, and at least every third of its entry's life, which
 * keeps the entry alive. Out of the queue (its attempt could name no
 * channel, or was the one-key kind) it backs off as a poller does, never
 * past the holder's end. So does a waiter once after a split vote where
 * votes can split (a quorum's: a member said yes, so no holder's release
 * may come to tell it): the contenders' leftovers are deleted within a
 * round trip, and jitter parts them. Once only: a member that lost its keys says yes while a
 * majority's holder lives, and that holder's release tells the waiter. */
int64_t rdl_lock_queue_next_check(struct redlease_lock *lk, int64_t now)
{
    struct rdl_lock_acq *acq = lk->acq;
    int split = lk->set->target.split_votes && acq->holder_left == 0;
    int64_t d;
    if (acq->in_queue && !(split && !acq->split_backoff))
        d = queue_life(lk) / 3;
    else
        d = rdl_backoff_next(&acq->backoff, &lk->set->svc->rng);
    acq->split_backoff = split;
    if (acq->holder_left > 0 && acq->holder_left < d) d = acq->holder_left;
    if (d < 1) d = 1;
    return now + d;
}

void rdl_lock_word(rdl_waiter *w, int64_t ms, int64_t now)
{
    struct redlease_lock *lk = w->owner;
    if (lk->state != RDL_LOCK_ACQUIRING) return;
    int64_t at = now + (ms > 0 ? ms : 0);
    if (lk->op) { /* the attempt out may have run before the word: check after it */
        if (at < lk->acq->recheck_at) lk->acq->recheck_at = at;
        return;
    }
    if (at < lk->next_action) {
        lk->next_action = at;
        rdl_lock_reschedule(lk);
    }
}

/* Builds the command for req from its lock (src/lease_cmd.h) and submits
 * it to req->node: EVALSHA under the script's SHA-1, or EVAL once the
 * server said NOSCRIPT; a renewal and a compare-and-delete as the server's
 * own conditional command where its connection found one. Also how a
 * router sends req on (rdl_lock_req_ops' resend). */
int rdl_lock_req_submit(rdl_req *req)
{
    struct redlease_lock *lk = req->lk;
    int s = req->script;
    /* A drop goes as the script: it is about a key some attempt may have
     * written, whose value (that attempt's time, the fence it minted) the
     * handle may not know; the script compares the token alone. Without
     * scripts, every attempt wrote one value (rdl_lock_send_req). */
    req->native = (s == RDL_SCRIPT_RENEW || s == RDL_SCRIPT_RELEASE) && !req->no_native &&
                          (req->kind != RDL_REQ_DROP || rdl_node_scripts_off(req->node)) && !lk->value_unsure
                      ? rdl_node_native(req->node)
                      : 0;
    rdl_cmd_spec spec = {.script = s, .native = req->native, .eval = req->sent_eval,
                         .probe = req->probe, .unordered = lk->unordered, .key = lk->key,
                         .keylen = lk->keylen, .token = lk->token, .ttl = lk->ttl,
                         .who = &lk->set->identity, .at = lk->at,
                         .held_fence = lk->fencing ? lk->opts->fence : 0};
    if (lk->fencing) {
        spec.fence_key = rdl_lock_fence_key(lk);
        spec.fence_keylen = lk->opts->fence_keylen;
    }
    if (lk->opts) {
        spec.limit = lk->opts->limit;
        spec.weight = lk->opts->weight;
        spec.capacity = lk->opts->capacity;
    }
    if (rdl_script_waits(s) && !req->probe) {
        spec.life = queue_life(lk);
        spec.claim = queue_claim(lk);
        spec.channel = queue_channel(lk, &spec.channel_len);
        if (spec.channel_len) {
            /* in the queue, a lock may be handed to it any time, and its
             * entry keeps a semaphore's waiters behind it: an acquire that
             * ends without the lease leaves by a drop */
            lk->acq->in_queue = 1;
            lk->maybe_set = 1;
        }
    }
    rdl_cmd cmd;
    rdl_cmd_encode(&cmd, &spec);
    /* behind ASKING for req->asking: the node sends both, or drops its link */
    return rdl_node_submit(req->node, req, cmd.argc, cmd.argv, cmd.lens);
}

int rdl_lock_req_scriptless(rdl_req *req)
{
    struct redlease_lock *lk = req->lk;
    /* only the op's current request (a stale one, an acquire whose
     * on_acquire ran, goes nowhere) or a drop, to the lock's node */
    int wanted = req->kind == RDL_REQ_DROP ||
                 (lk->req == req && (req->kind != RDL_REQ_ACQUIRE || (lk->acq && lk->state == RDL_LOCK_ACQUIRING)));
    if (!wanted || req->node != lk->node || needs_scripts(lk, req->kind)) return REDLEASE_ENOTSUP;
    req->script = script_for(lk, req->kind);
    req->probe = 0;
    req->sent_eval = 0;
    if (req->kind == RDL_REQ_ACQUIRE && lk->acq) lk->acq->in_queue = 0; /* the refused script joined nothing */
    return rdl_lock_req_submit(req);
}

int rdl_lock_send_req(struct redlease_lock *lk, int kind, int64_t now)
{
    int refused = needs_scripts(lk, kind);
    if (refused) return refused;
    rdl_req *req = rdl_calloc(1, sizeof *req);
    if (!req) return REDLEASE_ENOMEM;
    req->ops = &rdl_lock_req_ops;
    req->lk = lk;
    req->kind = kind;
    req->script = script_for(lk, kind);
    req->t0 = now; /* read before sending: the conservative side */
    req->node = lk->node;
    req->asking = kind != RDL_REQ_DROP && lk->asking; /* an ASK was for the op */
    req->moves = lk->moves;
    req->epoch = rdl_node_epoch(lk->node);
    /* a holder that met no queue asks first whether there is one */
    req->probe = kind == RDL_REQ_RELEASE && lk->queued && !lk->met_queue && lk->set->target.release_probe &&
                 !rdl_lock_limit(lk) && !rdl_lock_shared(lk) && /* the mutex's two-key form (scripts.c) */
                 !scriptless(lk);
    if (kind == RDL_REQ_ACQUIRE && lk->acq) lk->acq->in_queue = 0; /* rdl_lock_req_submit says if it joins */
    /* Each attempt writes the record of its own send, but one after an
     * attempt that may have written the key writes the same value: the
     * reclaiming script rewrites what an earlier one left (scripts.c,
     * mine()), but without scripts nothing does, and the drop and the
     * server's own compares must meet the value that is there; the
     * renewals and the release then send that value. */
    int64_t at = lk->at;
    if (kind == RDL_REQ_ACQUIRE && !lk->maybe_set) lk->at = rdl_node_server_ms(lk->node, now);
    int rc = rdl_lock_req_submit(req);
    if (rc) {
        lk->at = at; /* nothing was written with it */
        rdl_free(req);
        return rc;
    }
    lk->refs++;
    if (kind != RDL_REQ_DROP) lk->req = req;
    if (lk->asking && kind != RDL_REQ_DROP) {
        /* the command an ASK sent is out: what follows goes by the map */
        lk->asking = 0;
        lk->node = rdl_lock_route(lk);
    }
    return REDLEASE_OK;
}

/* Sends what the lock has to send (a pending drop first, then its op's
 * request), or parks it until its node's connection is ready. */
void rdl_lock_pump(struct redlease_lock *lk, int64_t now)
{
    int want_op = lk->op && !lk->req;
    if (!lk->drop_pending && !want_op) {
        rdl_lock_unpark(lk);
        return;
    }
    if (!rdl_node_ready(lk->node)) {
        rdl_node_use(lk->node, now); /* a Cluster node met for the first time */
        goto park_it;
    }
    rdl_lock_unpark(lk);
    if (lk->drop_pending) {
        int rc = rdl_lock_send_req(lk, RDL_REQ_DROP, now);
        if (rc == REDLEASE_ECONN) goto park_it;
        lk->drop_pending = 0; /* sent, or given up on: the TTL still ends it */
    }
    if (want_op) {
        int rc = rdl_lock_send_req(lk, lk->op, now);
        if (rc == REDLEASE_ECONN) goto park_it;
        if (rc) lk->set->fsm->op_failed(lk, rc, 1, 0, now);
    }
    return;
park_it:
    rdl_lock_park(lk);
}

/* A compare-and-delete of our key, behind everything this handle sent.
 * Sent again on the next connection if a broken link takes it, until the
 * key must have expired by itself: whatever the handle sent on a link that
 * broke can no longer run, so nothing of ours lives past now + TTL (plus
 * the drift margin). */
void rdl_lock_queue_drop(struct redlease_lock *lk, int64_t now)
{
    /* A queued handle's entry may outlive its key (its life is at least a
     * second): until it has expired too, the lock may be handed to it. */
    int64_t keep = lk->queued ? queue_life(lk) : lk->ttl;
    int64_t until = now + keep + rdl_drift(keep);
    if (until > lk->drop_until) lk->drop_until = until;
    lk->drop_pending = 1;
    rdl_lock_pump(lk, now);
}

/* No op deadline beyond this (lock.h: it shares its field with a held
 * lease's validity deadline). */
int64_t rdl_lock_op_limit(const struct redlease_lock *lk)
{
    return lk->state == RDL_LOCK_HELD ? RDL_NEVER : lk->op_limit;
}

/* Each command of an op gets a command timeout from its send, cut at
 * rdl_lock_op_limit (an acquire's wait budget). */
static void set_op_deadline(struct redlease_lock *lk, int64_t now)
{
    int64_t natural = now + lk->set->command_timeout;
    int64_t limit = rdl_lock_op_limit(lk);
    lk->op_cut = limit < natural;
    lk->op_deadline = lk->op_cut ? limit : natural;
}

/* The server confirmed write (an acquire or a renewal) and the lock asks
 * for replicas: op goes on with a ticket for the client's next WAIT
 * (src/acks.h), answered as this lock's request. Only on the connection
 * the write went out on: WAIT counts the replicas that have this
 * connection's writes, and on one that wrote nothing it would count every
 * replica at once. 0, or a status (nothing handed in). */
int rdl_lock_send_ack(struct redlease_lock *lk, int op, const rdl_req *write, uint64_t fence,
                    int64_t now)
{
    if (!rdl_node_ready(write->node) || rdl_node_epoch(write->node) != write->epoch)
        return REDLEASE_ECONN;
    if (rdl_lock_op_limit(lk) <= now) return REDLEASE_ETIMEDOUT; /* the budget is over: no WAIT for nothing */
    rdl_ack_ticket *ticket = rdl_calloc(1, sizeof *ticket);
    if (!ticket) return REDLEASE_ENOMEM;
    rdl_req *t = &ticket->req;
    t->ops = &rdl_lock_req_ops;
    t->lk = lk;
    t->kind = RDL_REQ_ACK;
    t->script = -1;
    t->t0 = write->t0; /* validity still counts from the write's send */
    t->epoch = write->epoch;
    t->node = write->node;
    t->moves = write->moves;
    ticket->fence = fence;
    ticket->min_replicas = rdl_lock_min_replicas(lk);
    ticket->timeout = rdl_lock_replica_timeout(lk);
    ticket->fsync = lk->wait_fsync;
    rdl_list_init(&ticket->link);
    lk->refs++;
    lk->req = t;
    lk->op = op;
    set_op_deadline(lk, now);
    rdl_acks_add(&write->node->acks, ticket); /* may answer it at once, NULL: the link went */
    return REDLEASE_OK;
}

void rdl_lock_start_op(struct redlease_lock *lk, int op, int64_t now)
{
    rdl_locks *ls = lk->set;
    lk->op = op;
    set_op_deadline(lk, now);
    lk->next_action = RDL_NEVER;
    rdl_lock_set_release_retry(lk, 0);
    if (op == RDL_REQ_ACQUIRE) {
        lk->acq->attempts++;
        ls->stats.attempts++;
        /* Where the client's channel already listens, even a first attempt
         * joins the queue; otherwise its first wait opens the channel
         * (rdl_lock_attempt_ended), and the subscription has it check again. */
        if (lk->acq->joins && rdl_waker_listening(ls->waker)) (void)rdl_waker_add(ls->waker, &lk->acq->waiter, now);
        rdl_lock_emit(lk, REDLEASE_EV_ATTEMPT, REDLEASE_OK, -1, -1, now);
    }
    rdl_lock_pump(lk, now);
    /* The server refused us for good: no use waiting for a connection. */
    int refused = rdl_node_refusal(lk->node);
    if (lk->op == op && !lk->req && refused) ls->fsm->refused(lk, refused, now);
}

/* The lock's commands go to n from now on; parked, it waits there. */
void rdl_lock_set_node(struct redlease_lock *lk, rdl_node *n, int64_t now)
{
    lk->node = n;
    if (lk->parked) {
        rdl_lock_unpark(lk);
        rdl_lock_pump(lk, now);
    }
}

/* The op's request goes stale: it stays on the wire, nobody waits for it. */
void rdl_lock_abandon_op(struct redlease_lock *lk)
{
    /* An attempt we stop waiting for may still set our key. */
    if (lk->op == RDL_REQ_ACQUIRE && lk->req) lk->maybe_set = 1;
    lk->op = 0;
    lk->req = NULL;
    if (!lk->drop_pending) rdl_lock_unpark(lk);
    if (lk->asking) {
        /* it was for that request alone: the key goes by the map again
         * (a drop that waits goes there) */
        lk->asking = 0;
        rdl_lock_set_node(lk, rdl_lock_route(lk), rdl_svc_now(lk->set->svc));
    }
}
