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
#include "errors.h"
#include "keys.h"
#include "lease_cmd.h"
#include "lease_math.h"
#include "lock_int.h"
#include "node.h"
#include "options.h"
#include "scripts.h"

/* --------------------------------------------------------- acquiring */

void rdl_lock_finish_acquire(struct redlease_lock *lk, int status, int64_t now)
{
    rdl_lock_unqueue(lk);
    rdl_lock_set_state(lk, RDL_LOCK_DONE);
    lk->next_action = RDL_NEVER;
    lk->acq->status = status;
    rdl_lock_owe(lk, RDL_NOTIFY_ACQUIRE);
    lk->set->stats.acquire_failed++;
    /* No attempt follows: a key an attempt of ours may have set (or may
     * still set: the drop goes behind it on the wire) goes now. */
    if (lk->maybe_set) rdl_lock_queue_drop(lk, now);
    rdl_lock_emit(lk, REDLEASE_EV_ACQUIRE_FAILED, status, -1, -1, now);
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
void rdl_lock_attempt_ended(struct redlease_lock *lk, int status, int definite, int cut, int64_t now)
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
        next = rdl_min64(rdl_lock_queue_next_check(lk, now), latest);
    } else if (!out) {
        int64_t d = rdl_backoff_next(&lk->acq->backoff, &ls->svc->rng);
        if (d < 1) d = 1; /* always progress in time */
        next = rdl_min64(now + d, latest);
    }
    /* a word that came while the attempt was out is newer than its answer */
    if (!out && lk->acq->recheck_at < next) next = lk->acq->recheck_at > now ? lk->acq->recheck_at : now;
    lk->acq->recheck_at = RDL_NEVER;
    int report = cut && lk->acq->last_status ? lk->acq->last_status : status;
    lk->acq->last_status = status;
    if (busy) {
        ls->stats.contended++;
        lk->met_queue = 1; /* a queue may form behind the holder */
        /* whose it is, when it is this client's own: never "another holder" */
        lk->acq->own_holder = rdl_lock_own_holder(lk) != NULL;
        if (lk->acq->own_holder)
            rdl_svc_set_errstr(ls->svc, NULL, RDL_OWN_HOLDER_TEXT, sizeof RDL_OWN_HOLDER_TEXT - 1);
    }
    /* the hook may end the handle, and its acquire part with it */
    rdl_lock_emit(lk, busy ? REDLEASE_EV_CONTENDED : REDLEASE_EV_ATTEMPT_FAILED, status, -1,
         out ? -1 : next - now, now);
    if (ls->svc->dead || lk->state != RDL_LOCK_ACQUIRING) return; /* the event hook ended it */
    if (out)
        rdl_lock_finish_acquire(lk, report, now);
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
    if (lk->op) rdl_lock_abandon_op(lk); /* an attempt still out will see our key */
    rdl_lock_unpark(lk);
    rdl_lock_unqueue(lk);
    rdl_lock_set_state(lk, RDL_LOCK_HELD);
    lk->valid_until = rdl_valid_until(req->t0, lk->ttl);
    lk->confirm_node = req->node;
    lk->confirm_epoch = (uint32_t)req->epoch;
    if (lk->opts) {
        lk->opts->hold_until = lk->opts->max_hold ? req->t0 + lk->opts->max_hold : RDL_NEVER;
        lk->opts->fence = fence; /* 0 unless fencing, which has opts */
    }
    lk->next_action = next_renewal(lk, req, now);
    lk->acq->status = REDLEASE_OK;
    rdl_lock_owe(lk, RDL_NOTIFY_ACQUIRE);
    ls->stats.acquired++;
    rdl_lock_emit(lk, REDLEASE_EV_ACQUIRED, REDLEASE_OK, now - req->t0, -1, now);
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
    rdl_lock_attempt_ended(lk, status == REDLEASE_OK ? REDLEASE_ETIMEDOUT : status, definite, 0, now);
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
        if (rdl_script_waits(req->script)) {
            /* waiting: -n is the holder's TTL left (a semaphore's first
             * holder's), rounded up */
            *holder_left = r->integer < -REDLEASE_MAX_TTL_MS ? REDLEASE_MAX_TTL_MS : -r->integer;
            return 0;
        }
    }
    return rdl_lock_reply_failure(lk->set, req->node, r, definite);
}

void rdl_lock_acquire_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r,
                          int current, int64_t now)
{
    uint64_t fence;
    int64_t holder_left;
    int definite;
    int res = acquire_outcome(lk, req, r, &fence, &holder_left, &definite);
    int fresh = rdl_valid_until(req->t0, lk->ttl) > now;
    int may_have_set = res == 1 || res == REDLEASE_ECONN; /* NULL: the link broke */
    if (!current) {
        /* ours already; not a joined handle's own attempt, which no lease
         * of it will ever use */
        if (lk->state == RDL_LOCK_HELD && !rdl_lock_joined(lk)) return;
        /* A late OK still worth having; not when replicas must acknowledge
         * it (nobody asked them): the next attempt reclaims the key. */
        if (res == 1 && lk->state == RDL_LOCK_ACQUIRING && fresh && !rdl_lock_replica_timeout(lk) &&
            !rdl_lock_from_elsewhere(lk, req)) {
            become_held(lk, req, fence, now);
        } else if (may_have_set) {
            lk->maybe_set = 1; /* the next attempt reclaims the key */
            if (lk->state != RDL_LOCK_ACQUIRING) rdl_lock_queue_drop(lk, now); /* nobody wants it */
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
        res = rdl_lock_send_ack(lk, RDL_REQ_ACQUIRE, req, fence, now);
        if (res != REDLEASE_OK) rdl_lock_attempt_ended(lk, res, res == REDLEASE_ENOMEM, 0, now);
        return;
    }
    if (may_have_set && !(res == 1 && fresh)) lk->maybe_set = 1;
    acquire_confirmed(lk, req, fence, res == 1 ? REDLEASE_OK : res == 0 ? REDLEASE_EBUSY : res,
                      definite, now);
}

/* -------------------------------------------------------------- held */

/* The status an EV_LOST carries beside its reason: what failed, if
 * anything did (a hold cap is no failure). */
static int lost_status(int reason)
{
    switch (reason) {
    case REDLEASE_LOST_NOT_OWNER: return REDLEASE_ENOTHELD;
    case REDLEASE_LOST_EXPIRED: return REDLEASE_ETIMEDOUT;
    case REDLEASE_LOST_CLOSED: return REDLEASE_ECANCELED;
    default: return REDLEASE_OK; /* REDLEASE_LOST_MAX_HOLD */
    }
}

void rdl_lock_lose(struct redlease_lock *lk, int reason, int64_t now)
{
    rdl_locks *ls = lk->set;
    if (lk->op) rdl_lock_abandon_op(lk);
    rdl_lock_set_state(lk, RDL_LOCK_DONE);
    lk->next_action = RDL_NEVER;
    lk->lost_reason = reason;
    /* Every handle of the lease loses it (re-entry); one its user
     * released (carried for the others) owes nothing. Their states are
     * settled before any event: the hook may end the client. */
    int told = !rdl_lock_carried(lk);
    if (told) {
        rdl_lock_owe(lk, RDL_NOTIFY_LOST);
        ls->stats.lost++;
    }
    int sharers = rdl_lock_lose_sharers(lk, reason);
    if (told) rdl_lock_emit(lk, REDLEASE_EV_LOST, lost_status(reason), -1, -1, now);
    if (sharers) rdl_lock_emit_sharers_lost(lk, reason, lost_status(reason), now);
    /* Stop holding it in Redis too, so the next holder need not wait. */
    if (reason != REDLEASE_LOST_NOT_OWNER && !ls->svc->dead) rdl_lock_queue_drop(lk, now);
}

static void renew_failed(struct redlease_lock *lk, int status, int64_t now)
{
    lk->set->stats.renew_failed++;
    lk->next_action = rdl_renew_retry_at(now, lk->renew_interval, lk->valid_until);
    rdl_lock_emit(lk, REDLEASE_EV_RENEW_FAILED, status, -1, lk->next_action - now, now);
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
    rdl_lock_emit(lk, REDLEASE_EV_RENEWED, REDLEASE_OK, now - req->t0, -1, now);
}

void rdl_lock_renew_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r, int current,
                        int64_t now)
{
    if (lk->state != RDL_LOCK_HELD) return; /* released, lost or cancelled meanwhile */
    if (!current && rdl_lock_from_elsewhere(lk, req)) return; /* the lock moved: says nothing */
    if (current) lk->op = 0;
    if (now >= lk->valid_until) {
        rdl_lock_lose(lk, REDLEASE_LOST_EXPIRED, now); /* a confirmation after the deadline is too late */
        return;
    }
    if (r && r->type == RDL_REPLY_INTEGER && r->integer == 1) {
        if (!(rdl_lock_replica_timeout(lk) && lk->renewal_acks)) {
            renew_confirmed(lk, req, current, now);
        } else if (current) { /* a stale one was never acknowledged: it counts for nothing */
            int rc = rdl_lock_send_ack(lk, RDL_REQ_RENEW, req, 0, now);
            if (rc) renew_failed(lk, rc, now);
        }
    } else if ((r && r->type == RDL_REPLY_INTEGER && r->integer == 0) || rdl_lock_is_wrongtype(r)) {
        /* Replies come in order, so even a stale "not ours" is the truth. */
        rdl_lock_lose(lk, REDLEASE_LOST_NOT_OWNER, now);
    } else if (current) {
        int definite; /* renewals are retried to the deadline whatever the error */
        renew_failed(lk, rdl_lock_reply_failure(lk->set, req->node, r, &definite), now);
    }
}

/* --------------------------------------------------- acknowledgement */

/* 1: enough replicas (and the local fsync) acknowledged; 0: too few (the
 * counts go to errstr, for the event and redlease_client_errstr()); or
 * the status of any other answer. */
static int ack_outcome(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r, int *definite)
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
        return rdl_lock_reply_failure(lk->set, req->node, r, definite); /* refused (NOPERM, unknown command...) */
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
    rdl_svc_set_errstr(lk->set->svc, rdl_node_name(req->node), text, strlen(text));
    return 0;
}

/* The WAIT (WAITAOF) behind an acquire or a renewal came back. A stale one
 * changes nothing: its op moved on, and the key an acquire set is still
 * covered by maybe_set. */
void rdl_lock_ack_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r, int current,
                      int64_t now)
{
    if (!current) return;
    int definite;
    int res = ack_outcome(lk, req, r, &definite);
    int status = res == 1 ? REDLEASE_OK : res == 0 ? REDLEASE_EREPLICAS : res;
    int op = lk->op;
    lk->op = 0;
    if (op == RDL_REQ_ACQUIRE) {
        uint64_t fence = ((const rdl_ack_ticket *)req)->fence; /* an ACK's req is its ticket's */
        acquire_confirmed(lk, req, fence, status, definite, now); /* maybe_set is on */
    } else if (op == RDL_REQ_RENEW && lk->state == RDL_LOCK_HELD) {
        if (now >= lk->valid_until)
            rdl_lock_lose(lk, REDLEASE_LOST_EXPIRED, now);
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

void rdl_lock_finish_release(struct redlease_lock *lk, int status, int64_t now)
{
    if (rdl_lock_carried(lk)) {
        /* The release of a lease its user had released already, for the
         * last handle joined to it, which hears how it went. */
        struct redlease_lock *last = rdl_lock_releasing_sharer(lk);
        rdl_lock_set_state(lk, RDL_LOCK_DONE);
        lk->op = 0;
        if (!last) return;
        lk = last;
    }
    rdl_lock_set_state(lk, RDL_LOCK_DONE);
    lk->op = 0;
    rdl_lock_report_release(lk, status, now);
}

void rdl_lock_report_release(struct redlease_lock *lk, int status, int64_t now)
{
    lk->release_status = status;
    rdl_lock_owe(lk, RDL_NOTIFY_RELEASE);
    lk->set->stats.released++;
    rdl_lock_emit(lk, REDLEASE_EV_RELEASED, status, -1, -1, now);
}

/* Compare-and-delete is safe to repeat: a transient failure is retried
 * until the release's deadline (command_timeout_ms from the call). */
static void release_failed(struct redlease_lock *lk, int status, int definite, int64_t now)
{
    rdl_locks *ls = lk->set;
    int64_t at = rdl_renew_retry_at(now, 4 * RDL_RELEASE_RETRY_MS, rdl_lock_op_limit(lk));
    int retry = !definite && at < rdl_lock_op_limit(lk);
    rdl_lock_emit(lk, REDLEASE_EV_RELEASE_FAILED, status, -1, retry ? at - now : -1, now);
    if (ls->svc->dead || lk->state != RDL_LOCK_RELEASING) return; /* the event hook ended it */
    if (!retry) {
        rdl_lock_finish_release(lk, status, now);
        return;
    }
    lk->op = 0;
    lk->next_action = at;
    rdl_lock_set_release_retry(lk, 1); /* a close waits for it */
}

void rdl_lock_release_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r, int64_t now)
{
    if (!r && now < lk->op_deadline) {
        rdl_lock_pump(lk, now); /* link broke: resent on the next connection */
        return;
    }
    if (r && r->type == RDL_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) {
        rdl_lock_finish_release(lk, r->integer ? REDLEASE_OK : REDLEASE_ENOTHELD, now);
    } else if (rdl_lock_is_wrongtype(r)) {
        rdl_lock_finish_release(lk, REDLEASE_ENOTHELD, now); /* another type: not our token */
    } else {
        int definite;
        int st = rdl_lock_reply_failure(lk->set, req->node, r, &definite);
        release_failed(lk, st, definite, now);
    }
}

/* -------------------------------------- driven by the client's timer */

void rdl_lock_op_failed(struct redlease_lock *lk, int status, int definite, int cut, int64_t now)
{
    int op = lk->op;
    lk->op = 0;
    if (op == RDL_REQ_ACQUIRE) {
        rdl_lock_attempt_ended(lk, status, definite, cut, now);
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
    rdl_lock_abandon_op(lk);
    lk->op = op;
    rdl_lock_op_failed(lk, status, 1, 0, now);
    rdl_lock_reschedule(lk);
}

void rdl_lock_run(struct redlease_lock *lk, int64_t now)
{
    rdl_locks *ls = lk->set;
    if (lk->drop_pending && now >= lk->drop_until) {
        /* Never got a link to go out on: the key has expired by itself. */
        lk->drop_pending = 0;
        if (!(lk->op && !lk->req)) rdl_lock_unpark(lk);
    }
    if (lk->state == RDL_LOCK_HELD && now >= lk->valid_until) {
        /* a renewal still unanswered when the lease ran out: watch the link */
        if (lk->req) rdl_node_note_timeout(lk->req->node, lk->req->t0, now);
        rdl_lock_lose(lk, REDLEASE_LOST_EXPIRED, now);
    } else if (lk->state == RDL_LOCK_HELD && now >= rdl_lock_hold_until(lk)) {
        rdl_lock_lose(lk, REDLEASE_LOST_MAX_HOLD, now);
    } else if (lk->op && now >= lk->op_deadline) {
        int op = lk->op;
        int sent = lk->req != NULL;
        int status = sent ? REDLEASE_ETIMEDOUT : rdl_node_status(lk->node);
        if (!sent && !lk->node->via && rdl_conn_connecting(&lk->node->conn) && !ls->svc->errstr[0]) {
            /* ended before the connect did, and nothing failed yet (no
             * Sentinel's word either): say what there is, not nothing */
            static const char text[] = "not connected yet: the connect is under way";
            rdl_svc_set_errstr(ls->svc, rdl_node_name(lk->node), text, sizeof text - 1);
        }
        if (sent) {
            ls->stats.timeouts++;
            rdl_node_note_timeout(lk->req->node, lk->req->t0, now);
        }
        rdl_lock_abandon_op(lk);
        lk->op = op; /* rdl_lock_op_failed decides by it */
        rdl_lock_op_failed(lk, status, !sent && rdl_node_refusal(lk->node), lk->op_cut, now);
    } else if (!lk->op && now >= lk->next_action) {
        if (lk->state == RDL_LOCK_ACQUIRING) {
            /* with re-entry, a lease of this client's it can join first */
            if (!rdl_lock_try_join(lk, now)) rdl_lock_start_op(lk, RDL_REQ_ACQUIRE, now);
        } else if (lk->state == RDL_LOCK_HELD) {
            rdl_lock_start_op(lk, RDL_REQ_RENEW, now);
        } else if (lk->state == RDL_LOCK_RELEASING) {
            rdl_lock_start_op(lk, RDL_REQ_RELEASE, now);
        } else {
            lk->next_action = RDL_NEVER;
        }
    }
    rdl_lock_reschedule(lk);
    rdl_lock_maybe_free(lk); /* a released handle whose drop expired */
}

void rdl_lock_send_waiting(struct redlease_lock *lk, int64_t now)
{
    rdl_lock_unpark(lk); /* rdl_lock_pump() parks it again if it must */
    rdl_lock_pump(lk, now);
    rdl_lock_reschedule(lk);
}

const rdl_lock_fsm_ops rdl_lock_fsm = {.op_failed = rdl_lock_op_failed, .refused = rdl_lock_on_refused};
