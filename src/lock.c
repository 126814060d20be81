/* SPDX-License-Identifier: MIT */
/* The lease state machine.
 *
 *   ACQUIRING --OK--> HELD --release()--> RELEASING --reply--> DONE
 *       |               |                                       ^
 *       +--busy/error---+--lost (expired, not owner, max hold)--+
 *          budget out        release() on DONE just reports, then frees
 *
 * One token per handle, so every attempt of a handle writes the same value.
 * A lock has at most one operation in progress (lk->op: an acquire attempt,
 * a renewal or the release) and at most one request that counts for it
 * (lk->req). Requests it stopped waiting for (timed out, cancelled) stay on
 * the wire as stale: their replies are recognised and never move the state
 * backwards. A stale OK is adopted only while still acquiring and still
 * locally valid. An attempt that may have set the key without it being
 * used (unanswered, answered too late) makes every later attempt a script
 * that reclaims a key holding our own token; an acquire that ends without
 * a lease then sends a best-effort compare-and-delete ("drop") behind its
 * attempts. A drop is only ever queued once no attempt of the handle will
 * follow it, so it can never delete a key the handle reports as held.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "acks.h"
#include "alloc.h"
#include "cluster.h"
#include "errors.h"
#include "keys.h"
#include "lease_cmd.h"
#include "lease_math.h"
#include "lock.h"
#include "node.h"
#include "options.h"
#include "scripts.h"

/* The handler of every request a lock makes (its req->ops): the layers
 * below hand its replies back through it (below). */
static const rdl_req_ops lock_req_ops;

/* ------------------------------------------------------------ helpers */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static int64_t wake_at(const struct redlease_lock *lk)
{
    int64_t at = RDL_NEVER;
    if (lk->op)
        at = lk->op_deadline;
    else
        at = lk->next_action;
    if (lk->state == RDL_LOCK_HELD) at = min64(at, min64(lk->valid_until, rdl_lock_hold_until(lk)));
    if (lk->drop_pending) at = min64(at, lk->drop_until);
    return at;
}

static void reschedule(struct redlease_lock *lk)
{
    rdl_heap_update(&lk->set->svc->heap, &lk->wake, wake_at(lk));
}

/* Every change of a lock's state goes through here, so stats.held_now
 * counts the handles in HELD by construction, never kept in step by hand. */
static void set_state(struct redlease_lock *lk, int state)
{
    redlease_stats *st = &lk->set->stats;
    if (lk->state == RDL_LOCK_HELD) st->held_now--;
    if (state == RDL_LOCK_HELD) st->held_now++;
    lk->state = state;
}

/* A release waiting for its retry: the handle's flag and the client's
 * count (what a close waits for) change together, here only. */
static void set_release_retry(struct redlease_lock *lk, unsigned on)
{
    if (lk->release_retry == on) return;
    lk->release_retry = on;
    if (on)
        lk->set->release_retries++;
    else
        lk->set->release_retries--;
}

static void owe(struct redlease_lock *lk, unsigned bit)
{
    lk->notify |= bit;
    if (!rdl_list_linked(&lk->notify_link)) rdl_list_push_back(&lk->set->notify, &lk->notify_link);
}

/* The text that goes with a failure status in an event: Redis's or the
 * connection's (ls->svc->errstr, set when the failure was seen). */
static const char *detail_for(const rdl_locks *ls, int status)
{
    switch (status) {
    case REDLEASE_OK:
    case REDLEASE_EBUSY:
    case REDLEASE_ECANCELED:
    case REDLEASE_ENOTHELD:
    case REDLEASE_ENOMEM: return NULL;
    case REDLEASE_ETIMEDOUT: return "no reply in time";
    case REDLEASE_EPROTO: return "a reply of an unexpected type";
    default: return ls->svc->errstr[0] ? ls->svc->errstr : NULL;
    }
}

static void emit(struct redlease_lock *lk, int type, int status, int64_t rtt, int64_t retry_in,
                 int64_t now)
{
    rdl_locks *ls = lk->set;
    if (!ls->svc->event_cb || ls->svc->dead) return;
    int64_t remaining = -1;
    if (lk->state == RDL_LOCK_HELD) remaining = lk->valid_until > now ? lk->valid_until - now : 0;
    redlease_event ev = {.type = type, .key = lk->key, .token = lk->token, .ttl_ms = lk->ttl,
                         .status = status, .rtt_ms = rtt, .remaining_ms = remaining,
                         .retry_in_ms = retry_in, .attempt = lk->acq ? (int)lk->acq->attempts : 0,
                         .detail = type == REDLEASE_EV_LOST ? NULL : detail_for(ls, status),
                         .key_len = lk->keylen};
    rdl_svc_emit(ls->svc, &ev);
}

static void set_node(struct redlease_lock *lk, rdl_node *n, int64_t now);

/* Waits for its node to be ready (node.c sends it then). */
static void park(struct redlease_lock *lk)
{
    if (lk->parked) return;
    lk->parked = 1;
    lk->set->parked++;
}

static void unpark(struct redlease_lock *lk)
{
    if (!lk->parked) return;
    lk->parked = 0;
    lk->set->parked--;
}

/* The op's request goes stale: it stays on the wire, nobody waits for it. */
static void abandon_op(struct redlease_lock *lk)
{
    /* An attempt we stop waiting for may still set our key. */
    if (lk->op == RDL_REQ_ACQUIRE && lk->req) lk->maybe_set = 1;
    lk->op = 0;
    lk->req = NULL;
    if (!lk->drop_pending) unpark(lk);
    if (lk->asking) {
        /* it was for that request alone: the key goes by the map again
         * (a drop that waits goes there) */
        lk->asking = 0;
        set_node(lk, rdl_cluster_route(lk->set->cluster, lk->key, lk->keylen), rdl_svc_now(lk->set->svc));
    }
}

/* The handle waits in no queue any more: words for it are not its. */
static void unqueue(struct redlease_lock *lk)
{
    if (lk->acq) rdl_waker_remove(&lk->acq->waiter);
}

static void maybe_free(struct redlease_lock *lk)
{
    if (lk->user_ref || lk->refs || lk->drop_pending || rdl_list_linked(&lk->notify_link)) return;
    rdl_lock_destroy(lk);
}

void rdl_lock_destroy(struct redlease_lock *lk)
{
    rdl_locks *ls = lk->set;
    rdl_list_remove(&lk->link);
    unpark(lk);
    rdl_list_remove(&lk->notify_link);
    rdl_heap_remove(&ls->svc->heap, &lk->wake);
    set_state(lk, RDL_LOCK_DONE); /* a handle freed while held counts no more */
    set_release_retry(lk, 0);
    ls->stats.locks_now--;
    unqueue(lk);
    rdl_free(lk->acq);
    rdl_free(lk->opts);
    rdl_free(lk);
}

static void unref(struct redlease_lock *lk)
{
    lk->refs--;
    maybe_free(lk);
}

/* req went to a node the lock has since moved from (a new Cluster map),
 * not where an ASK sent it: what it says is about a slot that node may
 * no longer serve, and confirms nothing. */
static int from_elsewhere(const struct redlease_lock *lk, const rdl_req *req)
{
    return (uint16_t)req->moves != lk->moves || (req->node != lk->node && !req->asking);
}

/* 1 if r is an error saying the key holds another type: not our token. */
static int is_wrongtype(const rdl_reply *r)
{
    return r && r->type == RDL_REPLY_ERROR && rdl_error_classify(r->str, r->len).wrongtype;
}

/* The status of a reply that is not one of the expected answers, with
 * Redis's text kept for events and redlease_client_errstr(). *definite:
 * retrying cannot help (src/errors.c says which errors). */
static int reply_failure(rdl_locks *ls, const rdl_reply *r, int *definite)
{
    *definite = 0;
    if (!r) return REDLEASE_ECONN;
    if (r->type == RDL_REPLY_ERROR) {
        rdl_svc_set_errstr(ls->svc, r->str, r->len);
        rdl_error_class e = rdl_error_classify(r->str, r->len);
        /* a redirect not followed (too many, or to nowhere usable): the
         * Cluster is moving the slot, which ends */
        *definite = !e.transient && !(ls->cluster && rdl_cluster_is_redirect(r));
        return e.status;
    }
    *definite = 1; /* a reply of the wrong kind will not change */
    return REDLEASE_EPROTO;
}

/* ------------------------------------------------------------ sending */

/* Which script a request runs, or -1 for the plain SET NX PX. */
static int script_for(const struct redlease_lock *lk, int kind)
{
    switch (kind) {
    case RDL_REQ_ACQUIRE:
        if (lk->acq->joins && !lk->acq->plain_next) return RDL_SCRIPT_QUEUE_ACQUIRE;
        if (lk->fencing) return RDL_SCRIPT_ACQUIRE_FENCED;
        /* Only a later attempt, or one sent again (a Cluster move), can
         * meet a key of its own making. */
        return lk->acq->attempts > 1 || lk->maybe_set ? RDL_SCRIPT_ACQUIRE : -1;
    case RDL_REQ_RENEW: return RDL_SCRIPT_RENEW;
    default: /* the release and drops */
        return lk->queued ? RDL_SCRIPT_QUEUE_RELEASE : RDL_SCRIPT_RELEASE;
    }
}

/* ------------------------------------------------------------ queueing */

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
    return min64(lk->ttl, lk->set->command_timeout);
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
 * past the holder's end. So does a quorum's waiter once after a split
 * vote (a member said yes, so no holder's release may come to tell it):
 * the contenders' leftovers are deleted within a round trip, and jitter
 * parts them. Once only: a member that lost its keys says yes while a
 * majority's holder lives, and that holder's release tells the waiter. */
static int64_t queue_next_check(struct redlease_lock *lk, int64_t now)
{
    struct rdl_lock_acq *acq = lk->acq;
    int split = lk->set->quorum && acq->holder_left == 0;
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
        reschedule(lk);
    }
}

/* Builds the command for req from its lock (src/lease_cmd.h) and submits
 * it to req->node: EVALSHA under the script's SHA-1, or EVAL once the
 * server said NOSCRIPT; a renewal and a compare-and-delete as the server's
 * own conditional command where its connection found one. */
static int req_submit(rdl_req *req)
{
    struct redlease_lock *lk = req->lk;
    if (req->asking) { /* (the clock is read only here: a read costs) */
        int rc = rdl_cluster_asking(req->node, rdl_svc_now(lk->set->svc));
        if (rc) return rc;
    }
    int s = req->script;
    req->native = (s == RDL_SCRIPT_RENEW || s == RDL_SCRIPT_RELEASE) && !req->no_native
                      ? rdl_node_native(req->node)
                      : 0;
    rdl_cmd_spec spec = {.script = s, .native = req->native, .eval = req->sent_eval,
                         .probe = req->probe, .unordered = lk->unordered, .key = lk->key,
                         .keylen = lk->keylen, .token = lk->token, .ttl = lk->ttl};
    if (lk->fencing) {
        spec.fence_key = rdl_lock_fence_key(lk);
        spec.fence_keylen = lk->opts->fence_keylen;
    }
    if (s == RDL_SCRIPT_QUEUE_ACQUIRE && !req->probe) {
        spec.life = queue_life(lk);
        spec.claim = queue_claim(lk);
        spec.channel = queue_channel(lk, &spec.channel_len);
        if (spec.channel_len) {
            /* in the queue, a lock may be handed to it any time: an
             * acquire that ends without it leaves by a drop */
            lk->acq->in_queue = 1;
            lk->maybe_set = 1;
        }
    }
    rdl_cmd cmd;
    rdl_cmd_encode(&cmd, &spec);
    int rc = rdl_node_submit(req->node, req, cmd.argc, cmd.argv, cmd.lens);
    /* An ASKING left without its command would let the next command on
     * the link, maybe another lock's, skip the check that the key is not
     * still on the node the slot leaves: that link goes. */
    if (rc && req->asking) rdl_node_restart(req->node, REDLEASE_ECONN, "ASKING sent without its command");
    return rc;
}

static int send_req(struct redlease_lock *lk, int kind, int64_t now)
{
    rdl_req *req = rdl_calloc(1, sizeof *req);
    if (!req) return REDLEASE_ENOMEM;
    req->ops = &lock_req_ops;
    req->lk = lk;
    req->kind = kind;
    req->script = script_for(lk, kind);
    req->t0 = now; /* read before sending: the conservative side */
    req->node = lk->node;
    req->asking = kind != RDL_REQ_DROP && lk->asking; /* an ASK was for the op */
    req->moves = lk->moves;
    req->epoch = rdl_node_epoch(lk->node);
    /* a holder that met no queue asks first whether there is one */
    req->probe = kind == RDL_REQ_RELEASE && lk->queued && !lk->met_queue && !lk->set->quorum;
    if (kind == RDL_REQ_ACQUIRE && lk->acq) lk->acq->in_queue = 0; /* req_submit says if it joins */
    int rc = req_submit(req);
    if (rc) {
        rdl_free(req);
        return rc;
    }
    lk->refs++;
    if (kind != RDL_REQ_DROP) lk->req = req;
    if (lk->asking && kind != RDL_REQ_DROP) {
        /* the command an ASK sent is out: what follows goes by the map */
        lk->asking = 0;
        lk->node = rdl_cluster_route(lk->set->cluster, lk->key, lk->keylen);
    }
    return REDLEASE_OK;
}

static void op_failed(struct redlease_lock *lk, int status, int definite, int cut, int64_t now);

/* Sends what the lock has to send (a pending drop first, then its op's
 * request), or parks it until its node's connection is ready. */
static void pump(struct redlease_lock *lk, int64_t now)
{
    int want_op = lk->op && !lk->req;
    if (!lk->drop_pending && !want_op) {
        unpark(lk);
        return;
    }
    if (!rdl_node_ready(lk->node)) {
        rdl_node_use(lk->node, now); /* a Cluster node met for the first time */
        goto park;
    }
    unpark(lk);
    if (lk->drop_pending) {
        int rc = send_req(lk, RDL_REQ_DROP, now);
        if (rc == REDLEASE_ECONN) goto park;
        lk->drop_pending = 0; /* sent, or given up on: the TTL still ends it */
    }
    if (want_op) {
        int rc = send_req(lk, lk->op, now);
        if (rc == REDLEASE_ECONN) goto park;
        if (rc) op_failed(lk, rc, 1, 0, now);
    }
    return;
park:
    park(lk);
}

/* A compare-and-delete of our key, behind everything this handle sent.
 * Sent again on the next connection if a broken link takes it, until the
 * key must have expired by itself: whatever the handle sent on a link that
 * broke can no longer run, so nothing of ours lives past now + TTL (plus
 * the drift margin). */
static void queue_drop(struct redlease_lock *lk, int64_t now)
{
    /* A queued handle's entry may outlive its key (its life is at least a
     * second): until it has expired too, the lock may be handed to it. */
    int64_t keep = lk->queued ? queue_life(lk) : lk->ttl;
    int64_t until = now + keep + rdl_drift(keep);
    if (until > lk->drop_until) lk->drop_until = until;
    lk->drop_pending = 1;
    pump(lk, now);
}

/* No op deadline beyond this (lock.h: it shares its field with a held
 * lease's validity deadline). */
static int64_t op_limit(const struct redlease_lock *lk)
{
    return lk->state == RDL_LOCK_HELD ? RDL_NEVER : lk->op_limit;
}

/* Each command of an op gets a command timeout from its send, cut at
 * op_limit (an acquire's wait budget). */
static void set_op_deadline(struct redlease_lock *lk, int64_t now)
{
    int64_t natural = now + lk->set->command_timeout;
    int64_t limit = op_limit(lk);
    lk->op_cut = limit < natural;
    lk->op_deadline = lk->op_cut ? limit : natural;
}

/* The server confirmed write (an acquire or a renewal) and the lock asks
 * for replicas: op goes on with a ticket for the client's next WAIT
 * (src/acks.h), answered as this lock's request. Only on the connection
 * the write went out on: WAIT counts the replicas that have this
 * connection's writes, and on one that wrote nothing it would count every
 * replica at once. 0, or a status (nothing handed in). */
static int send_ack(struct redlease_lock *lk, int op, const rdl_req *write, uint64_t fence,
                    int64_t now)
{
    if (!rdl_node_ready(write->node) || rdl_node_epoch(write->node) != write->epoch)
        return REDLEASE_ECONN;
    if (op_limit(lk) <= now) return REDLEASE_ETIMEDOUT; /* the budget is over: no WAIT for nothing */
    rdl_ack_ticket *ticket = rdl_calloc(1, sizeof *ticket);
    if (!ticket) return REDLEASE_ENOMEM;
    rdl_req *t = &ticket->req;
    t->ops = &lock_req_ops;
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

static void start_op(struct redlease_lock *lk, int op, int64_t now)
{
    rdl_locks *ls = lk->set;
    lk->op = op;
    set_op_deadline(lk, now);
    lk->next_action = RDL_NEVER;
    set_release_retry(lk, 0);
    if (op == RDL_REQ_ACQUIRE) {
        lk->acq->attempts++;
        ls->stats.attempts++;
        /* Where the client's channel already listens, even a first attempt
         * joins the queue; otherwise its first wait opens the channel
         * (attempt_ended), and the subscription has it check again. */
        if (lk->acq->joins && rdl_waker_listening(ls->waker)) (void)rdl_waker_add(ls->waker, &lk->acq->waiter, now);
        emit(lk, REDLEASE_EV_ATTEMPT, REDLEASE_OK, -1, -1, now);
    }
    pump(lk, now);
    /* The server refused us for good: no use waiting for a connection. */
    int refused = rdl_node_refusal(lk->node);
    if (lk->op == op && !lk->req && refused) rdl_lock_on_refused(lk, refused, now);
}

/* ---------------------------------------------------------- acquiring */

static void finish_acquire(struct redlease_lock *lk, int status, int64_t now)
{
    unqueue(lk);
    set_state(lk, RDL_LOCK_DONE);
    lk->next_action = RDL_NEVER;
    lk->acq->status = status;
    owe(lk, RDL_NOTIFY_ACQUIRE);
    lk->set->stats.acquire_failed++;
    /* No attempt follows: a key an attempt of ours may have set (or may
     * still set: the drop goes behind it on the wire) goes now. */
    if (lk->maybe_set) queue_drop(lk, now);
    emit(lk, REDLEASE_EV_ACQUIRE_FAILED, status, -1, -1, now);
}

/* The latest an attempt may start and still be answered inside the wait
 * budget, going by the connection's shortest round trip (conn.ls). */
static int64_t last_start(const struct redlease_lock *lk)
{
    if (lk->acq->budget_end == RDL_NEVER) return RDL_NEVER;
    int64_t rtt = rdl_node_rtt_floor(lk->node);
    return lk->acq->budget_end - (rtt > 1 ? rtt : 1);
}

/* An attempt ended without the lease: contention (EBUSY) or a failure.
 * Retried after a backoff while the budget and max_attempts allow and the
 * failure is not definite; otherwise on_acquire gets the outcome. An
 * attempt cut short by the budget (cut) reports the outcome of the one
 * before it, if any: "busy" says more than "no answer in the last ms". */
static void attempt_ended(struct redlease_lock *lk, int status, int definite, int cut, int64_t now)
{
    rdl_locks *ls = lk->set;
    int busy = status == REDLEASE_EBUSY;
    int64_t latest = last_start(lk);
    const struct rdl_lock_acq *acq = lk->acq;
    int capped = acq->max_attempts && acq->attempts >= (uint32_t)acq->max_attempts;
    int out = definite || capped || now >= latest;
    int64_t next = RDL_NEVER;
    if (!out && busy && lk->acq->joins) {
        /* words reach it from now on (the client's first waiter opens the
         * channel; no memory: it goes by timers) */
        (void)rdl_waker_add(ls->waker, &lk->acq->waiter, now);
        next = min64(queue_next_check(lk, now), latest);
    } else if (!out) {
        int64_t d = rdl_backoff_next(&lk->acq->backoff, &ls->svc->rng);
        if (d < 1) d = 1; /* always progress in time */
        next = min64(now + d, latest);
    }
    /* a word that came while the attempt was out is newer than its answer */
    if (!out && lk->acq->recheck_at < next) next = lk->acq->recheck_at > now ? lk->acq->recheck_at : now;
    lk->acq->recheck_at = RDL_NEVER;
    int report = cut && lk->acq->last_status ? lk->acq->last_status : status;
    lk->acq->last_status = status;
    if (busy) {
        ls->stats.contended++;
        lk->met_queue = 1; /* a queue may form behind the holder */
    }
    /* the hook may end the handle, and its acquire part with it */
    emit(lk, busy ? REDLEASE_EV_CONTENDED : REDLEASE_EV_ATTEMPT_FAILED, status, -1,
         out ? -1 : next - now, now);
    if (ls->svc->dead || lk->state != RDL_LOCK_ACQUIRING) return; /* the event hook ended it */
    if (out)
        finish_acquire(lk, report, now);
    else
        lk->next_action = next;
}

/* When the lease confirmed by req renews next: after the interval; at
 * once when the connection it came through has been replaced meanwhile
 * (a quorum whose member came back: held() is 0 until it is asked). */
static int64_t next_renewal(const struct redlease_lock *lk, const rdl_req *req, int64_t now)
{
    if (req->epoch != rdl_node_epoch(req->node)) return now;
    return lk->renew_interval > 0 ? req->t0 + lk->renew_interval : RDL_NEVER;
}

static void become_held(struct redlease_lock *lk, const rdl_req *req, uint64_t fence, int64_t now)
{
    rdl_locks *ls = lk->set;
    if (lk->op) abandon_op(lk); /* an attempt still out will see our key */
    unpark(lk);
    unqueue(lk);
    set_state(lk, RDL_LOCK_HELD);
    lk->valid_until = rdl_valid_until(req->t0, lk->ttl);
    lk->confirm_node = req->node;
    lk->confirm_epoch = (uint32_t)req->epoch;
    if (lk->opts) {
        lk->opts->hold_until = lk->opts->max_hold ? req->t0 + lk->opts->max_hold : RDL_NEVER;
        lk->opts->fence = fence; /* 0 unless fencing, which has opts */
    }
    lk->next_action = next_renewal(lk, req, now);
    lk->acq->status = REDLEASE_OK;
    owe(lk, RDL_NOTIFY_ACQUIRE);
    ls->stats.acquired++;
    emit(lk, REDLEASE_EV_ACQUIRED, REDLEASE_OK, now - req->t0, -1, now);
}

/* An acquire's last word came (its write's answer, or the WAIT's behind
 * it): a lease while still valid by the write's send time; an OK after
 * that is too late (ETIMEDOUT); either way a failure ends the attempt,
 * retried or not. */
static void acquire_confirmed(struct redlease_lock *lk, const rdl_req *req, uint64_t fence,
                              int status, int definite, int64_t now)
{
    if (status == REDLEASE_OK && rdl_valid_until(req->t0, lk->ttl) > now) {
        become_held(lk, req, fence, now);
        return;
    }
    attempt_ended(lk, status == REDLEASE_OK ? REDLEASE_ETIMEDOUT : status, definite, 0, now);
}

/* 1 acquired (*fence set), 0 held by someone else (*holder_left: its
 * remaining TTL in ms when a queued attempt learnt it, else 0), or a
 * negative status. */
static int acquire_outcome(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r,
                           uint64_t *fence, int64_t *holder_left, int *definite)
{
    *fence = 0;
    *holder_left = 0;
    *definite = 0;
    if (r && req->script < 0) { /* SET NX PX */
        if (rdl_reply_is_ok(r)) return 1;
        if (r->type == RDL_REPLY_NIL) return 0;
    } else if (r && r->type == RDL_REPLY_INTEGER) {
        if (r->integer > 0) {
            if (lk->fencing) *fence = (uint64_t)r->integer;
            return 1;
        }
        if (r->integer == 0) return 0;
        if (req->script == RDL_SCRIPT_QUEUE_ACQUIRE) { /* waiting: -n is the holder's TTL left */
            *holder_left = r->integer < -REDLEASE_MAX_TTL_MS ? REDLEASE_MAX_TTL_MS : -r->integer;
            return 0;
        }
    }
    return reply_failure(lk->set, r, definite);
}

static void acquire_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r,
                          int current, int64_t now)
{
    uint64_t fence;
    int64_t holder_left;
    int definite;
    int res = acquire_outcome(lk, req, r, &fence, &holder_left, &definite);
    int fresh = rdl_valid_until(req->t0, lk->ttl) > now;
    int may_have_set = res == 1 || res == REDLEASE_ECONN; /* NULL: the link broke */
    if (!current) {
        if (lk->state == RDL_LOCK_HELD) return; /* ours already */
        /* A late OK still worth having; not when replicas must acknowledge
         * it (nobody asked them): the next attempt reclaims the key. */
        if (res == 1 && lk->state == RDL_LOCK_ACQUIRING && fresh && !rdl_lock_replica_timeout(lk) &&
            !from_elsewhere(lk, req)) {
            become_held(lk, req, fence, now);
        } else if (may_have_set) {
            lk->maybe_set = 1; /* the next attempt reclaims the key */
            if (lk->state != RDL_LOCK_ACQUIRING) queue_drop(lk, now); /* nobody wants it */
        }
        return;
    }
    lk->op = 0;
    lk->acq->holder_left = holder_left;
    /* A Cluster slot moving refuses the queue's script of three keys
     * until the move ends; a single key goes on by ASK (the queue is
     * tried again after it). */
    lk->acq->plain_next = req->script == RDL_SCRIPT_QUEUE_ACQUIRE && r && r->type == RDL_REPLY_ERROR &&
                          rdl_error_classify(r->str, r->len).multikey;
    if (res == 1 && fresh && rdl_lock_replica_timeout(lk)) {
        /* Ours in Redis, not a lease until replicas have it: an acquire
         * that ends without it deletes the key (maybe_set). */
        lk->maybe_set = 1;
        res = send_ack(lk, RDL_REQ_ACQUIRE, req, fence, now);
        if (res != REDLEASE_OK) attempt_ended(lk, res, res == REDLEASE_ENOMEM, 0, now);
        return;
    }
    if (may_have_set && !(res == 1 && fresh)) lk->maybe_set = 1;
    acquire_confirmed(lk, req, fence, res == 1 ? REDLEASE_OK : res == 0 ? REDLEASE_EBUSY : res,
                      definite, now);
}

/* -------------------------------------------------------------- held */

static void lose(struct redlease_lock *lk, int reason, int64_t now)
{
    rdl_locks *ls = lk->set;
    if (lk->op) abandon_op(lk);
    set_state(lk, RDL_LOCK_DONE);
    lk->next_action = RDL_NEVER;
    lk->lost_reason = reason;
    owe(lk, RDL_NOTIFY_LOST);
    ls->stats.lost++;
    emit(lk, REDLEASE_EV_LOST, reason, -1, -1, now);
    /* Stop holding it in Redis too, so the next holder need not wait. */
    if (reason != REDLEASE_LOST_NOT_OWNER && !ls->svc->dead) queue_drop(lk, now);
}

static void renew_failed(struct redlease_lock *lk, int status, int64_t now)
{
    lk->set->stats.renew_failed++;
    lk->next_action = rdl_renew_retry_at(now, lk->renew_interval, lk->valid_until);
    emit(lk, REDLEASE_EV_RENEW_FAILED, status, -1, lk->next_action - now, now);
}

/* A renewal sent at req->t0 is confirmed (and acknowledged, when asked). */
static void renew_confirmed(struct redlease_lock *lk, const rdl_req *req, int current, int64_t now)
{
    int64_t vu = rdl_valid_until(req->t0, lk->ttl);
    if (vu > lk->valid_until) lk->valid_until = vu;
    lk->confirm_node = req->node;
    lk->confirm_epoch = (uint32_t)req->epoch;
    if (current) lk->next_action = next_renewal(lk, req, now);
    lk->set->stats.renewed++;
    emit(lk, REDLEASE_EV_RENEWED, REDLEASE_OK, now - req->t0, -1, now);
}

static void renew_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r, int current,
                        int64_t now)
{
    if (lk->state != RDL_LOCK_HELD) return; /* released, lost or cancelled meanwhile */
    if (!current && from_elsewhere(lk, req)) return; /* the lock moved: says nothing */
    if (current) lk->op = 0;
    if (now >= lk->valid_until) {
        lose(lk, REDLEASE_LOST_EXPIRED, now); /* a confirmation after the deadline is too late */
        return;
    }
    if (r && r->type == RDL_REPLY_INTEGER && r->integer == 1) {
        if (!(rdl_lock_replica_timeout(lk) && lk->renewal_acks)) {
            renew_confirmed(lk, req, current, now);
        } else if (current) { /* a stale one was never acknowledged: it counts for nothing */
            int rc = send_ack(lk, RDL_REQ_RENEW, req, 0, now);
            if (rc) renew_failed(lk, rc, now);
        }
    } else if ((r && r->type == RDL_REPLY_INTEGER && r->integer == 0) || is_wrongtype(r)) {
        /* Replies come in order, so even a stale "not ours" is the truth. */
        lose(lk, REDLEASE_LOST_NOT_OWNER, now);
    } else if (current) {
        int definite; /* renewals are retried to the deadline whatever the error */
        renew_failed(lk, reply_failure(lk->set, r, &definite), now);
    }
}

/* ---------------------------------------------------- acknowledgement */

/* 1: enough replicas (and the local fsync) acknowledged; 0: too few (the
 * counts go to errstr, for the event and redlease_client_errstr()); or
 * the status of any other answer. */
static int ack_outcome(struct redlease_lock *lk, const rdl_reply *r, int *definite)
{
    *definite = 0;
    long long local = 1, replicas;
    if (r && !lk->wait_fsync && r->type == RDL_REPLY_INTEGER) {
        replicas = r->integer;
    } else if (r && lk->wait_fsync && r->type == RDL_REPLY_ARRAY && r->elements == 2 &&
               r->element[0].type == RDL_REPLY_INTEGER && r->element[1].type == RDL_REPLY_INTEGER) {
        local = r->element[0].integer;
        replicas = r->element[1].integer;
    } else {
        return reply_failure(lk->set, r, definite); /* refused (NOPERM, unknown command...) */
    }
    if (local >= 1 && replicas >= rdl_lock_min_replicas(lk)) return 1;
    char text[128];
    if (lk->wait_fsync)
        snprintf(text, sizeof text, "WAITAOF: %s, %lld of %d replicas fsynced in %ld ms",
                 local >= 1 ? "fsynced here" : "not fsynced here", replicas, rdl_lock_min_replicas(lk),
                 (long)rdl_lock_replica_timeout(lk));
    else
        snprintf(text, sizeof text, "WAIT: %lld of %d replicas acknowledged in %ld ms", replicas,
                 rdl_lock_min_replicas(lk), (long)rdl_lock_replica_timeout(lk));
    rdl_svc_set_errstr(lk->set->svc, text, strlen(text));
    return 0;
}

/* The WAIT (WAITAOF) behind an acquire or a renewal came back. A stale one
 * changes nothing: its op moved on, and the key an acquire set is still
 * covered by maybe_set. */
static void ack_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r, int current,
                      int64_t now)
{
    if (!current) return;
    int definite;
    int res = ack_outcome(lk, r, &definite);
    int status = res == 1 ? REDLEASE_OK : res == 0 ? REDLEASE_EREPLICAS : res;
    int op = lk->op;
    lk->op = 0;
    if (op == RDL_REQ_ACQUIRE) {
        uint64_t fence = ((const rdl_ack_ticket *)req)->fence; /* an ACK's req is its ticket's */
        acquire_confirmed(lk, req, fence, status, definite, now); /* maybe_set is on */
    } else if (op == RDL_REQ_RENEW && lk->state == RDL_LOCK_HELD) {
        if (now >= lk->valid_until)
            lose(lk, REDLEASE_LOST_EXPIRED, now);
        else if (status == REDLEASE_OK)
            renew_confirmed(lk, req, 1, now);
        else
            renew_failed(lk, status, now); /* the lease runs on its last acknowledged renewal */
    }
}

/* ----------------------------------------------------------- release */

/* How often a release that met a transient error is retried (at most
 * halfway to its deadline each time, rdl_renew_retry_at). */
#define RDL_RELEASE_RETRY_MS 50

static void finish_release(struct redlease_lock *lk, int status, int64_t now)
{
    set_state(lk, RDL_LOCK_DONE);
    lk->op = 0;
    lk->release_status = status;
    owe(lk, RDL_NOTIFY_RELEASE);
    lk->set->stats.released++;
    emit(lk, REDLEASE_EV_RELEASED, status, -1, -1, now);
}

/* Compare-and-delete is safe to repeat: a transient failure is retried
 * until the release's deadline (command_timeout_ms from the call). */
static void release_failed(struct redlease_lock *lk, int status, int definite, int64_t now)
{
    rdl_locks *ls = lk->set;
    int64_t at = rdl_renew_retry_at(now, 4 * RDL_RELEASE_RETRY_MS, op_limit(lk));
    int retry = !definite && at < op_limit(lk);
    emit(lk, REDLEASE_EV_RELEASE_FAILED, status, -1, retry ? at - now : -1, now);
    if (ls->svc->dead || lk->state != RDL_LOCK_RELEASING) return; /* the event hook ended it */
    if (!retry) {
        finish_release(lk, status, now);
        return;
    }
    lk->op = 0;
    lk->next_action = at;
    set_release_retry(lk, 1); /* a close waits for it */
}

static void release_reply(struct redlease_lock *lk, const rdl_reply *r, int64_t now)
{
    if (!r && now < lk->op_deadline) {
        pump(lk, now); /* link broke: resent on the next connection */
        return;
    }
    if (r && r->type == RDL_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) {
        finish_release(lk, r->integer ? REDLEASE_OK : REDLEASE_ENOTHELD, now);
    } else if (is_wrongtype(r)) {
        finish_release(lk, REDLEASE_ENOTHELD, now); /* another type: not our token */
    } else {
        int definite;
        int st = reply_failure(lk->set, r, &definite);
        release_failed(lk, st, definite, now);
    }
}

/* --------------------------------------------------- driven by client.c */

static void op_failed(struct redlease_lock *lk, int status, int definite, int cut, int64_t now)
{
    int op = lk->op;
    lk->op = 0;
    if (op == RDL_REQ_ACQUIRE) {
        attempt_ended(lk, status, definite, cut, now);
    } else if (op == RDL_REQ_RENEW) {
        renew_failed(lk, status, now);
    } else if (op == RDL_REQ_RELEASE) {
        lk->op = op;
        release_failed(lk, status, definite, now);
    }
}

void rdl_lock_on_refused(struct redlease_lock *lk, int status, int64_t now)
{
    /* Only what waits for a connection; renewals run to the deadline. */
    if (!lk->op || lk->req || lk->op == RDL_REQ_RENEW) return;
    int op = lk->op;
    abandon_op(lk);
    lk->op = op;
    op_failed(lk, status, 1, 0, now);
    reschedule(lk);
}

void rdl_lock_run(struct redlease_lock *lk, int64_t now)
{
    rdl_locks *ls = lk->set;
    if (lk->drop_pending && now >= lk->drop_until) {
        /* Never got a link to go out on: the key has expired by itself. */
        lk->drop_pending = 0;
        if (!(lk->op && !lk->req)) unpark(lk);
    }
    if (lk->state == RDL_LOCK_HELD && now >= lk->valid_until) {
        /* a renewal still unanswered when the lease ran out: watch the link */
        if (lk->req) rdl_node_note_timeout(lk->req->node, lk->req->t0, now);
        lose(lk, REDLEASE_LOST_EXPIRED, now);
    } else if (lk->state == RDL_LOCK_HELD && now >= rdl_lock_hold_until(lk)) {
        lose(lk, REDLEASE_LOST_MAX_HOLD, now);
    } else if (lk->op && now >= lk->op_deadline) {
        int op = lk->op;
        int sent = lk->req != NULL;
        int status = sent ? REDLEASE_ETIMEDOUT : rdl_node_status(lk->node);
        if (sent) {
            ls->stats.timeouts++;
            rdl_node_note_timeout(lk->req->node, lk->req->t0, now);
        }
        abandon_op(lk);
        lk->op = op; /* op_failed decides by it */
        op_failed(lk, status, !sent && rdl_node_refusal(lk->node), lk->op_cut, now);
    } else if (!lk->op && now >= lk->next_action) {
        if (lk->state == RDL_LOCK_ACQUIRING)
            start_op(lk, RDL_REQ_ACQUIRE, now);
        else if (lk->state == RDL_LOCK_HELD)
            start_op(lk, RDL_REQ_RENEW, now);
        else if (lk->state == RDL_LOCK_RELEASING)
            start_op(lk, RDL_REQ_RELEASE, now);
        else
            lk->next_action = RDL_NEVER;
    }
    reschedule(lk);
    maybe_free(lk); /* a released handle whose drop expired */
}


void rdl_lock_send_waiting(struct redlease_lock *lk, int64_t now)
{
    unpark(lk); /* pump() parks it again if it must */
    pump(lk, now);
    reschedule(lk);
}

/* The lease was last confirmed on n's current connection. */
static int confirmed_on(const struct redlease_lock *lk, const rdl_node *n)
{
    return lk->confirm_node == n && lk->confirm_epoch == (uint32_t)rdl_node_epoch(n);
}

/* The lock's commands go to n from now on; parked, it waits there. */
static void set_node(struct redlease_lock *lk, rdl_node *n, int64_t now)
{
    lk->node = n;
    if (lk->parked) {
        unpark(lk);
        pump(lk, now);
    }
}

void rdl_lock_move(struct redlease_lock *lk, rdl_node *n, int64_t now)
{
    /* What is out on the old node no longer counts (from_elsewhere: the
     * move count it went out with is old): the op goes again from the new
     * node, now, the same attempt within the same deadline (an acquire's
     * as the reclaiming script: the old one may still set the key). */
    lk->moves++;
    lk->asking = 0; /* an ASK was about the old node's slot */
    if (lk->op && lk->req) {
        if (lk->op == RDL_REQ_ACQUIRE) lk->maybe_set = 1;
        lk->req = NULL;
    }
    set_node(lk, n, now);
    if (lk->state == RDL_LOCK_HELD) {
        /* Not held until confirmed there (the slot moved, or a replica
         * took over), which a renewal does at once. */
        lk->confirm_node = NULL;
        if (!lk->op) lk->next_action = now;
    }
    pump(lk, now);
    reschedule(lk);
}

/* A Cluster node answered MOVED or ASK (src/cluster.h): the lock's
 * current request, or a drop, goes on to the node named. Ready, that node
 * gets the same request, so its send time still counts (1); not yet, the
 * lock waits for it as for any connection, within the op's deadline, and
 * sends afresh from there, behind ASKING if an ASK sent it (2: req is
 * done with). A renewal is not confirmed meanwhile (held() is 0), its
 * deadline unchanged. 0: r is handled as usual: no redirect, a stale
 * request's (it did nothing, nobody waits; a MOVED still corrects the
 * map), or one past RDL_MAX_REDIRECTS or to nowhere usable (reply_failure
 * counts it transient: a Cluster still moving its slots). */
static int follow_redirect(rdl_req *req, const rdl_reply *r, int64_t now)
{
    struct redlease_lock *lk = req->lk;
    rdl_locks *ls = lk->set;
    int ask;
    if (!ls->cluster) return 0;
    rdl_node *to = rdl_cluster_redirected(ls->cluster, req->node, r, &ask, now);
    int current = lk->req == req;
    if (!to || (!current && req->kind != RDL_REQ_DROP) || req->redirects >= RDL_MAX_REDIRECTS)
        return 0;
    /* followed: no failure, so nothing for errstr (a later one names its own) */
    if (req->kind == RDL_REQ_RENEW) lk->confirm_node = NULL;
    lk->asking = 0;
    if (rdl_node_ready(to)) {
        if (!ask) set_node(lk, to, now);
        req->node = to;
        req->epoch = rdl_node_epoch(to);
        req->asking = ask;
        req->redirects++;
        if (req_submit(req) == 0) return 1;
    }
    /* Sent from the lock once to is ready (send_req: behind ASKING for an
     * ASK, after which the lock goes by the map again). A drop's ASK is
     * not worth parking the lock behind ASKING: its key expires anyway. */
    if (!current && ask) return 0;
    lk->asking = ask;
    set_node(lk, to, now);
    if (current)
        lk->req = NULL;
    else
        lk->drop_pending = 1;
    pump(lk, now);
    return 2;
}

void rdl_lock_on_ready(struct redlease_lock *lk, int64_t now)
{
    /* Re-verify at once: until a renewal on this connection confirms it,
     * the lease is not "held" (the server may have lost it). */
    if (lk->state == RDL_LOCK_HELD && !lk->op && !confirmed_on(lk, lk->node)) {
        lk->next_action = now;
        reschedule(lk);
    }
}

/* 1 when req was sent again (NOSCRIPT -> EVAL, a refused conditional
 * command -> its script) and lives on. */
static int handle_reply(rdl_req *req, const rdl_reply *r, int64_t now)
{
    struct redlease_lock *lk = req->lk;
    rdl_reply as_script;
    rdl_error_class e = {0};
    if (r && r->type == RDL_REPLY_ERROR) e = rdl_error_classify(r->str, r->len);
    /* SET is refused over maxmemory (OOM), where the renewal script, which
     * only reads and sets a TTL, runs: that renewal goes as the script.
     * A refused command (not the server's after all, an ACL, an option it
     * lacks) makes the link send scripts. */
    int oom = e.oom && req->script == RDL_SCRIPT_RENEW;
    if (req->native && (e.refused || oom)) {
        /* Resent as the script, it lands behind whatever the handle sent
         * since, harmless as after NOSCRIPT (below). */
        if (!oom) rdl_conn_native_refused(&req->node->conn);
        req->no_native = 1;
        if (req_submit(req) == 0) return 1;
        r = NULL;
        e = (rdl_error_class){0};
    } else if (r && req->native && req->script == RDL_SCRIPT_RENEW && r->type != RDL_REPLY_ERROR) {
        /* SET IFEQ's OK is the script's 1; its nil (not ours), 0 */
        int ok = rdl_reply_is_ok(r);
        if (ok || r->type == RDL_REPLY_NIL) {
            as_script = (rdl_reply){.type = RDL_REPLY_INTEGER, .integer = ok};
            r = &as_script;
        }
    }
    if (e.noscript && req->script >= 0 && !req->sent_eval) {
        /* A cold or flushed script cache: EVAL this once, which fills it,
         * and EVALSHA goes on working. Resent, it lands behind whatever the
         * handle sent since, which is harmless: a late acquire OK is handled
         * as any stale one (dropped once the acquire is over), a renewal
         * never re-creates a key, compare-and-delete can repeat. */
        req->sent_eval = 1;
        if (req_submit(req) == 0) return 1;
        r = NULL;
    }
    if (req->probe && r && r->type == RDL_REPLY_INTEGER && r->integer == -1) {
        /* The probe found a queue and changed nothing: the whole release,
         * which hands the lock over, goes now (behind what the handle sent
         * since, harmless as after NOSCRIPT). */
        req->probe = 0;
        lk->met_queue = 1;
        if (req_submit(req) == 0) return 1;
        r = NULL;
    }
    if (r && r->type == RDL_REPLY_ERROR) {
        int f = follow_redirect(req, r, now);
        if (f == 1) return 1;
        if (f == 2) {
            reschedule(lk);
            return 0;
        }
    }
    int current = lk->req == req;
    if (current) lk->req = NULL;
    switch (req->kind) {
    case RDL_REQ_ACQUIRE: acquire_reply(lk, req, r, current, now); break;
    case RDL_REQ_RENEW: renew_reply(lk, req, r, current, now); break;
    case RDL_REQ_ACK: ack_reply(lk, req, r, current, now); break;
    case RDL_REQ_RELEASE:
        if (current) release_reply(lk, r, now);
        break;
    default: /* drops: nobody waits; one the link took goes out again */
        if (!r && now < lk->drop_until) {
            lk->drop_pending = 1;
            pump(lk, now);
        }
        break;
    }
    reschedule(lk);
    return 0;
}

/* The lock owns its requests from send_req() to here: each holds a
 * reference to it, and is freed once back (unless resent), also when the
 * client is ending and nothing is acted on. */
/* One of the lock's requests came back (r NULL: the link took it): the
 * lock frees it, or sends it again (NOSCRIPT -> EVAL, a redirect). */
static void on_reply(rdl_req *req, const rdl_reply *r)
{
    struct redlease_lock *lk = req->lk;
    rdl_locks *ls = lk->set;
    if (!ls->svc->dead && handle_reply(req, r, rdl_svc_now(ls->svc))) return;
    unref(lk);
    rdl_free(req);
}

/* Its reply comes soon: fetch the handle while the replies before it are
 * handled. */
static void on_prefetch(const rdl_req *req) { rdl_lock_prefetch(req->lk); }

/* The lease a request is about, for the quorum's own commands. */
static void on_lease(const rdl_req *req, rdl_cmd_spec *spec)
{
    const struct redlease_lock *lk = req->lk;
    spec->key = lk->key;
    spec->keylen = lk->keylen;
    spec->token = lk->token;
    spec->ttl = lk->ttl;
    spec->fence_key = lk->fencing ? rdl_lock_fence_key(lk) : NULL;
    spec->fence_keylen = lk->fencing ? lk->opts->fence_keylen : 0;
}

static int on_waited(const rdl_req *req) { return req->lk->req == req; }

static const rdl_req_ops lock_req_ops = {
    .reply = on_reply,
    .prefetch = on_prefetch,
    .lease = on_lease,
    .waited = on_waited,
};

/* Runs the callbacks owed, in order: acquire, lost, release. forced: during
 * redlease_client_free(), when ls->svc->dead already stops the normal path. */
static void run_callbacks(struct redlease_lock *lk, int forced)
{
    rdl_locks *ls = lk->set;
    lk->refs++; /* a release inside a callback must not free lk under us */
    while (lk->notify && (forced || !ls->svc->dead)) {
        if (lk->notify & RDL_NOTIFY_ACQUIRE) {
            lk->notify &= ~RDL_NOTIFY_ACQUIRE;
            /* the acquire's part goes with its last use */
            struct rdl_lock_acq *acq = lk->acq;
            unqueue(lk);
            lk->acq = NULL;
            acq->on_acquire(lk, acq->status, lk->arg);
            rdl_free(acq);
        } else if (lk->notify & RDL_NOTIFY_LOST) {
            lk->notify &= ~RDL_NOTIFY_LOST;
            if (lk->on_lost) lk->on_lost(lk, lk->lost_reason, lk->arg);
        } else {
            lk->notify &= ~RDL_NOTIFY_RELEASE;
            lk->user_ref = 0; /* the last callback: the handle ends with it */
            if (lk->on_release) lk->on_release(lk, lk->release_status, lk->release_arg);
        }
    }
    if (!lk->notify) rdl_list_remove(&lk->notify_link);
    lk->refs--;
    if (!ls->svc->dead) maybe_free(lk);
}

void rdl_lock_deliver(struct redlease_lock *lk) { run_callbacks(lk, lk->ended); }

/* What on_release says for a handle with nothing left in Redis to delete. */
static int done_release_status(const struct redlease_lock *lk)
{
    return lk->lost_reason ? REDLEASE_ENOTHELD : REDLEASE_OK;
}

void rdl_lock_end_by_client(struct redlease_lock *lk)
{
    lk->ended = 1;
    if (lk->state == RDL_LOCK_ACQUIRING || (lk->state == RDL_LOCK_HELD && (lk->notify & RDL_NOTIFY_ACQUIRE))) {
        lk->acq->status = REDLEASE_ECANCELED;
        owe(lk, RDL_NOTIFY_ACQUIRE);
    } else if (lk->state == RDL_LOCK_HELD) {
        lk->lost_reason = REDLEASE_LOST_CLOSED;
        owe(lk, RDL_NOTIFY_LOST);
    }
    /* Released by the user (user_ref: on_release not delivered yet) with
     * no outcome owed yet: a release under way is cut short (ECANCELED);
     * one asked for during this free, or by a hook in the middle of
     * redlease_release() itself, ends as on any finished handle. */
    if (lk->release_called && lk->user_ref && !(lk->notify & RDL_NOTIFY_RELEASE)) {
        lk->release_status = lk->state == RDL_LOCK_RELEASING ? REDLEASE_ECANCELED
                                                             : done_release_status(lk);
        owe(lk, RDL_NOTIFY_RELEASE);
    }
    set_state(lk, RDL_LOCK_DONE);
    lk->op = 0;
    run_callbacks(lk, 1);
}

/* A lease the user was never told about (on_acquire(OK) still queued) is
 * reported cancelled and deleted, never handed out. */
static void cancel_unannounced(struct redlease_lock *lk, int64_t now)
{
    if (lk->op) abandon_op(lk);
    set_state(lk, RDL_LOCK_DONE);
    lk->acq->status = REDLEASE_ECANCELED;
    queue_drop(lk, now);
}

void rdl_lock_close(struct redlease_lock *lk, int64_t now)
{
    if (lk->state == RDL_LOCK_ACQUIRING) {
        if (lk->op) abandon_op(lk);
        finish_acquire(lk, REDLEASE_ECANCELED, now);
    } else if (lk->state == RDL_LOCK_HELD && (lk->notify & RDL_NOTIFY_ACQUIRE)) {
        cancel_unannounced(lk, now);
    } else if (lk->state == RDL_LOCK_HELD) {
        lose(lk, REDLEASE_LOST_CLOSED, now);
    }
    reschedule(lk);
}

/* ------------------------------------------------------------- the API */

int rdl_lock_new(rdl_locks *ls, const char *resource, size_t rlen, const redlease_lock_options *o,
                 redlease_acquire_cb on_acquire, redlease_lost_cb on_lost, void *arg,
                 redlease_lock **out)
{
    if (out) *out = NULL;
    if (!resource || !on_acquire || !out) return REDLEASE_EINVAL;
    if (rlen == 0 || rlen > REDLEASE_MAX_RESOURCE) return REDLEASE_EINVAL;
    redlease_lock_options defaults;
    if (!o) {
        redlease_lock_options_init(&defaults);
        o = &defaults;
    }
    int rc = rdl_lock_options_check(o);
    if (rc) return rc;
    int64_t replica_timeout = rdl_replica_timeout(o, ls->command_timeout);
    if (replica_timeout < 0) return REDLEASE_EINVAL;
    if (replica_timeout && ls->quorum) return REDLEASE_EINVAL; /* whose replicas? */
    if (ls->svc->dead || ls->closing) return REDLEASE_ECANCELED;

    size_t keylen = rdl_key_len(ls->prefix_len, resource, rlen, REDLEASE_KEY_LOCK);
    size_t fence_keylen = o->fencing ? rdl_key_len(ls->prefix_len, resource, rlen, REDLEASE_KEY_FENCE) : 0;
    int rare = o->fencing || replica_timeout || o->max_hold_ms;
    /* the keys start where key[] does, in the struct's tail padding */
    size_t size = offsetof(struct redlease_lock, key) + keylen + 1 + (o->fencing ? fence_keylen + 1 : 0);
    struct redlease_lock *lk = rdl_calloc(1, size > sizeof *lk ? size : sizeof *lk);
    struct rdl_lock_acq *acq = rdl_calloc(1, sizeof *acq);
    struct rdl_lock_opts *opts = rare ? rdl_calloc(1, sizeof *opts) : NULL;
    int64_t now = rdl_svc_now(ls->svc);
    rc = !lk || !acq || (rare && !opts)                      ? REDLEASE_ENOMEM
         : rdl_token_new(lk->token) != 0                    ? REDLEASE_ESYS
         : rdl_heap_insert(&ls->svc->heap, &lk->wake, now) != 0 ? REDLEASE_ENOMEM
                                                           : REDLEASE_OK;
    if (rc) {
        rdl_free(lk);
        rdl_free(acq);
        rdl_free(opts);
        return rc;
    }
    lk->acq = acq;
    lk->opts = opts;
    rdl_key_write(lk->key, ls->prefix, ls->prefix_len, resource, rlen, REDLEASE_KEY_LOCK);
    lk->keylen = (uint16_t)keylen;
    if (o->fencing) {
        rdl_key_write(lk->key + keylen + 1, ls->prefix, ls->prefix_len, resource, rlen, REDLEASE_KEY_FENCE);
        opts->fence_keylen = (uint32_t)fence_keylen;
    }
    if (opts) {
        opts->max_hold = o->max_hold_ms;
        opts->hold_until = RDL_NEVER;
        opts->min_replicas = o->min_replicas;
        opts->replica_timeout = (int32_t)replica_timeout;
    }
    lk->set = ls;
    lk->node = ls->cluster ? rdl_cluster_route(ls->cluster, lk->key, lk->keylen) : ls->home;
    rdl_list_init(&lk->link);
    rdl_list_init(&lk->notify_link);
    lk->user_ref = 1;
    set_state(lk, RDL_LOCK_ACQUIRING);
    acq->on_acquire = on_acquire;
    lk->on_lost = on_lost;
    lk->arg = arg;
    lk->ttl = (int32_t)o->ttl_ms;
    lk->renew_interval = (int32_t)(o->renew_interval_ms == 0 ? o->ttl_ms / 3 : o->renew_interval_ms);
    acq->max_attempts = o->max_attempts;
    lk->fencing = o->fencing != 0;
    /* The default is the queue (docs/design.md, section 11).
     * A single attempt (wait_ms 0) joins no queue and goes as a plain SET
     * NX, which finds a lock handed to a waiter taken; its release hands
     * the lock over too. */
    lk->queued = o->wait_mode != REDLEASE_WAIT_POLL && ls->waker;
    /* N servers' queues could hand the lock to N different heads: a
     * quorum's waiters are woken, in no order (design 11.5) */
    lk->unordered = o->wait_mode == REDLEASE_WAIT_WAKE || ls->quorum;
    acq->joins = lk->queued && o->wait_ms != 0;
    rdl_list_init(&acq->waiter.link);
    acq->waiter.token = lk->token;
    acq->waiter.owner = lk;
    acq->recheck_at = RDL_NEVER;
    lk->wait_fsync = o->wait_fsync != 0;
    lk->renewal_acks = o->renewal_acks != 0;
    rdl_backoff_init(&acq->backoff, o->jitter, o->retry_base_ms, o->retry_max_ms);
    acq->budget_end = o->wait_ms == REDLEASE_WAIT_FOREVER ? RDL_NEVER : now + o->wait_ms;
    /* With a budget, on_acquire comes by its end whatever the timeouts;
     * a single attempt (wait_ms 0) keeps its command timeout. */
    lk->op_limit = o->wait_ms > 0 ? acq->budget_end : RDL_NEVER;
    lk->next_action = now; /* the first attempt goes out from the loop */
    rdl_list_push_back(&ls->locks, &lk->link);
    ls->stats.locks_now++;
    *out = lk;
    rdl_svc_enter(ls->svc);
    rdl_svc_leave(ls->svc); /* arms the timer */
    return REDLEASE_OK;
}

int redlease_release(redlease_lock *lk, redlease_release_cb on_release, void *arg)
{
    if (!lk || lk->release_called) return REDLEASE_EINVAL;
    rdl_locks *ls = lk->set;
    if (ls->svc->dead && !ls->freeing) return REDLEASE_ECANCELED; /* from close's done callback */
    if (ls->svc->dead) {
        /* During redlease_client_free(): the handle ends with the client,
         * and on_release runs before free returns, as it does after a close. */
        lk->release_called = 1;
        lk->on_release = on_release;
        lk->release_arg = arg;
        if (lk->ended && lk->user_ref) { /* else ending it will owe it */
            lk->release_status = done_release_status(lk);
            owe(lk, RDL_NOTIFY_RELEASE);
        }
        return REDLEASE_OK;
    }
    rdl_svc_enter(ls->svc);
    int64_t now = rdl_svc_now(ls->svc);
    lk->release_called = 1;
    lk->on_release = on_release;
    lk->release_arg = arg;
    /* finish_acquire() and cancel_unannounced() can reach the event hook,
     * which may free the client: then the handle has been ended (its
     * on_release(ECANCELED) delivered) and nothing more is owed. */
    switch (lk->state) {
    case RDL_LOCK_ACQUIRING:
        if (lk->op) abandon_op(lk);
        finish_acquire(lk, REDLEASE_ECANCELED, now);
        if (!ls->svc->dead) finish_release(lk, REDLEASE_OK, now);
        break;
    case RDL_LOCK_HELD:
        if (lk->notify & RDL_NOTIFY_ACQUIRE) {
            cancel_unannounced(lk, now);
            if (!ls->svc->dead) finish_release(lk, REDLEASE_OK, now);
            break;
        }
        if (lk->op) abandon_op(lk); /* a renewal in flight goes stale */
        set_state(lk, RDL_LOCK_RELEASING);
        lk->op_limit = now + ls->command_timeout; /* retries end there */
        start_op(lk, RDL_REQ_RELEASE, now);
        break;
    default: /* DONE: failed, cancelled or lost */
        finish_release(lk, done_release_status(lk), now);
        break;
    }
    if (!ls->svc->dead) reschedule(lk);
    rdl_svc_leave(ls->svc);
    return REDLEASE_OK;
}

int redlease_lock_held(const redlease_lock *lk)
{
    if (!lk || lk->state != RDL_LOCK_HELD) return 0;
    const rdl_locks *ls = lk->set;
    return lk->confirm_node && rdl_node_ready(lk->confirm_node) && confirmed_on(lk, lk->confirm_node) &&
           rdl_svc_now(ls->svc) < lk->valid_until;
}

int64_t redlease_lock_remaining_ms(const redlease_lock *lk)
{
    if (!redlease_lock_held(lk)) return 0; /* one rule for both */
    int64_t left = lk->valid_until - rdl_svc_now(lk->set->svc);
    return left > 0 ? left : 0;
}

const char *redlease_lock_token(const redlease_lock *lk) { return lk ? lk->token : NULL; }
const char *redlease_lock_key(const redlease_lock *lk) { return lk ? lk->key : NULL; }
size_t redlease_lock_key_len(const redlease_lock *lk) { return lk ? lk->keylen : 0; }
uint64_t redlease_lock_fence(const redlease_lock *lk) { return lk && lk->opts ? lk->opts->fence : 0; }
redlease_client *redlease_lock_client(const redlease_lock *lk) { return lk ? lk->set->svc->client : NULL; }
