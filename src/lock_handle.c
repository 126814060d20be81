/* SPDX-License-Identifier: MIT */
/* A lock handle's bookkeeping (src/lock_int.h), the lowest of the lock
 * layer's files: its deadline in the heap, its state and counters, the
 * callbacks it owes and their delivery, its references, its end; and how
 * a reply reads (stale, a failure, on which connection it confirms). */
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


static int64_t wake_at(const struct redlease_lock *lk)
{
    int64_t at = RDL_NEVER;
    if (lk->op)
        at = lk->op_deadline;
    else
        at = lk->next_action;
    if (lk->state == RDL_LOCK_HELD) at = rdl_min64(at, rdl_min64(lk->valid_until, rdl_lock_hold_until(lk)));
    if (lk->drop_pending) at = rdl_min64(at, lk->drop_until);
    return at;
}

void rdl_lock_reschedule(struct redlease_lock *lk)
{
    rdl_heap_update(&lk->set->svc->heap, &lk->wake, wake_at(lk));
}

/* Every change of a lock's state goes through here, so stats.held_now
 * counts the leases held by construction, never kept in step by hand: the
 * handles in HELD but those joined to another's lease (re-entry), which
 * are joined before they enter HELD and stay so until freed. */
void rdl_lock_set_state(struct redlease_lock *lk, int state)
{
    redlease_stats *st = &lk->set->stats;
    int counts = !rdl_lock_joined(lk);
    if (lk->state == RDL_LOCK_HELD && counts) st->held_now--;
    if (state == RDL_LOCK_HELD && counts) st->held_now++;
    lk->state = state;
}

/* A release waiting for its retry: the handle's flag and the client's
 * count (what a close waits for) change together, here only. */
void rdl_lock_set_release_retry(struct redlease_lock *lk, unsigned on)
{
    if (lk->release_retry == on) return;
    lk->release_retry = on;
    if (on)
        lk->set->release_retries++;
    else
        lk->set->release_retries--;
}

void rdl_lock_owe(struct redlease_lock *lk, unsigned bit)
{
    lk->notify |= bit;
    if (!rdl_list_linked(&lk->notify_link)) rdl_list_push_back(&lk->set->notify, &lk->notify_link);
}

/* The text that goes with a failure status in an event: Redis's or the
 * connection's (ls->svc->errstr, set when the failure was seen); for
 * contention, whether the holder is this client's own handle. */
static const char *detail_for(const struct redlease_lock *lk, int status)
{
    const rdl_locks *ls = lk->set;
    switch (status) {
    case REDLEASE_EBUSY: return lk->acq && lk->acq->own_holder ? RDL_OWN_HOLDER_TEXT : NULL;
    case REDLEASE_OK:
    case REDLEASE_ECANCELED:
    case REDLEASE_ENOTHELD:
    case REDLEASE_ENOMEM: return NULL;
    case REDLEASE_ETIMEDOUT: return "no reply in time";
    case REDLEASE_EPROTO: return "a reply of an unexpected type";
    default: return ls->svc->errstr[0] ? ls->svc->errstr : NULL;
    }
}

void rdl_lock_emit(struct redlease_lock *lk, int type, int status, int64_t rtt, int64_t retry_in,
                 int64_t now)
{
    rdl_locks *ls = lk->set;
    if (!ls->svc->event_cb || ls->svc->dead) return;
    int64_t remaining = -1;
    const struct redlease_lock *lease = rdl_lock_carrier(lk); /* a joined handle's is its lease's */
    if (lk->state == RDL_LOCK_HELD) remaining = lease->valid_until > now ? lease->valid_until - now : 0;
    redlease_event ev = {.type = type, .key = lk->key, .token = lease->token, .ttl_ms = lease->ttl,
                         .status = status, .rtt_ms = rtt, .remaining_ms = remaining,
                         .retry_in_ms = retry_in, .attempt = lk->acq ? (int)lk->acq->attempts : 0,
                         .detail = type == REDLEASE_EV_LOST ? NULL : detail_for(lk, status),
                         .key_len = lk->keylen,
                         .lost_reason = type == REDLEASE_EV_LOST ? lk->lost_reason : 0,
                         .node = lk->node ? rdl_node_name(lk->node) : NULL};
    rdl_svc_emit(ls->svc, &ev);
}

/* Waits for its node to be ready (the client's flush of that node sends
 * it then: on_node_flush, src/client.c). */
void rdl_lock_park(struct redlease_lock *lk)
{
    if (lk->parked) return;
    lk->parked = 1;
    lk->set->parked++;
}

void rdl_lock_unpark(struct redlease_lock *lk)
{
    if (!lk->parked) return;
    lk->parked = 0;
    lk->set->parked--;
}

/* The handle waits in no queue any more: words for it are not its. */
void rdl_lock_unqueue(struct redlease_lock *lk)
{
    if (lk->acq) rdl_waker_remove(&lk->acq->waiter);
}

void rdl_lock_maybe_free(struct redlease_lock *lk)
{
    if (lk->user_ref || lk->refs || lk->drop_pending || rdl_list_linked(&lk->notify_link)) return;
    if (lk->opts && lk->opts->joined) return; /* handles joined to its lease point here */
    rdl_lock_destroy(lk);
}

void rdl_lock_destroy(struct redlease_lock *lk)
{
    rdl_locks *ls = lk->set;
    rdl_list_remove(&lk->link);
    rdl_lock_unpark(lk);
    rdl_list_remove(&lk->notify_link);
    rdl_heap_remove(&ls->svc->heap, &lk->wake);
    rdl_lock_set_state(lk, RDL_LOCK_DONE); /* a handle freed while held counts no more */
    rdl_lock_set_release_retry(lk, 0);
    ls->stats.locks_now--;
    rdl_lock_unqueue(lk);
    struct redlease_lock *first = rdl_lock_joined(lk) ? lk->opts->lease : NULL;
    if (lk->opts) rdl_list_remove(&lk->opts->sharers);
    rdl_free(lk->acq);
    rdl_free(lk->opts);
    rdl_free(lk);
    /* The first handle of its lease, kept for it, may go now. Not while the
     * client ends: then every handle goes, in no order. */
    if (first && !ls->svc->dead && !--first->opts->joined) rdl_lock_maybe_free(first);
}

void rdl_lock_unref(struct redlease_lock *lk)
{
    lk->refs--;
    rdl_lock_maybe_free(lk);
}

/* Handles of this client waiting to acquire lk's resource with re-entry
 * check at once whether they can join lk's lease (lock_join.c), or as
 * soon as their attempt out is answered. */
static void poke_sharers(struct redlease_lock *lk)
{
    rdl_locks *ls = lk->set;
    if (ls->svc->dead || lk->state != RDL_LOCK_HELD) return;
    int64_t now = rdl_svc_now(ls->svc);
    for (rdl_list *i = ls->locks.next; i != &ls->locks; i = i->next) {
        struct redlease_lock *x = RDL_CONTAINER(i, struct redlease_lock, link);
        if (x == lk || x->state != RDL_LOCK_ACQUIRING || !x->opts || !x->opts->reentrant ||
            !rdl_lock_same_key(x, lk))
            continue;
        if (x->op) {
            if (now < x->acq->recheck_at) x->acq->recheck_at = now;
        } else if (now < x->next_action) {
            x->next_action = now;
            rdl_lock_reschedule(x);
        }
    }
}

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
            rdl_lock_unqueue(lk);
            lk->acq = NULL;
            acq->on_acquire(lk, acq->status, lk->arg);
            /* a lease that can be joined now: this client's handles waiting
             * for its resource to join it look again */
            if (acq->status == REDLEASE_OK && lk->opts && lk->opts->reentrant) poke_sharers(lk);
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
    if (!ls->svc->dead) rdl_lock_maybe_free(lk);
}

void rdl_lock_deliver(struct redlease_lock *lk) { run_callbacks(lk, lk->ended); }

/* What on_release says for a handle with nothing left in Redis to delete. */
int rdl_lock_done_release_status(const struct redlease_lock *lk)
{
    return lk->lost_reason ? REDLEASE_ENOTHELD : REDLEASE_OK;
}

void rdl_lock_end_by_client(struct redlease_lock *lk)
{
    lk->ended = 1;
    if (lk->state == RDL_LOCK_ACQUIRING || (lk->state == RDL_LOCK_HELD && (lk->notify & RDL_NOTIFY_ACQUIRE))) {
        lk->acq->status = REDLEASE_ECANCELED;
        rdl_lock_owe(lk, RDL_NOTIFY_ACQUIRE);
    } else if (lk->state == RDL_LOCK_HELD && !rdl_lock_carried(lk)) {
        lk->lost_reason = REDLEASE_LOST_CLOSED;
        rdl_lock_owe(lk, RDL_NOTIFY_LOST);
    }
    /* Released by the user (user_ref: on_release not delivered yet) with
     * no outcome owed yet: a release under way is cut short (ECANCELED);
     * one asked for during this free, or by a hook in the middle of
     * redlease_release() itself, ends as on any finished handle. */
    if (lk->release_called && lk->user_ref && !(lk->notify & RDL_NOTIFY_RELEASE)) {
        lk->release_status = lk->state == RDL_LOCK_RELEASING ? REDLEASE_ECANCELED
                                                             : rdl_lock_done_release_status(lk);
        rdl_lock_owe(lk, RDL_NOTIFY_RELEASE);
    }
    rdl_lock_set_state(lk, RDL_LOCK_DONE);
    lk->op = 0;
    run_callbacks(lk, 1);
}

/* req went to a node the lock has since moved from (a new Cluster map),
 * not where an ASK sent it: what it says is about a slot that node may
 * no longer serve, and confirms nothing. */
int rdl_lock_from_elsewhere(const struct redlease_lock *lk, const rdl_req *req)
{
    return (uint16_t)req->moves != lk->moves || (req->node != lk->node && !req->asking);
}

/* 1 if r is an error saying the key holds another type: not our token. */
int rdl_lock_is_wrongtype(const rdl_reply *r)
{
    return r && r->type == RDL_REPLY_ERROR && rdl_error_classify(r->str, r->len).wrongtype;
}

/* The status of a reply from node from that is not one of the expected
 * answers, with Redis's text kept, named for from, for events and
 * redlease_client_errstr(). *definite:
 * retrying cannot help (src/errors.c says which errors). */
int rdl_lock_reply_failure(rdl_locks *ls, const rdl_node *from, const rdl_reply *r, int *definite)
{
    *definite = 0;
    if (!r) return REDLEASE_ECONN;
    if (r->type == RDL_REPLY_ERROR) {
        rdl_svc_set_errstr(ls->svc, rdl_node_name(from), r->str, r->len);
        rdl_error_class e = rdl_error_classify(r->str, r->len);
        /* a redirect its router did not follow (too many, or to nowhere
         * usable): where keys move, the move ends */
        *definite = !e.transient && !(e.redirect && ls->target.moving_keys);
        return e.status;
    }
    *definite = 1; /* a reply of the wrong kind will not change */
    return REDLEASE_EPROTO;
}

/* The lease was last confirmed on n's current connection. */
int rdl_lock_confirmed_on(const struct redlease_lock *lk, const rdl_node *n)
{
    return lk->confirm_node == n && lk->confirm_epoch == (uint32_t)rdl_node_epoch(n);
}

int rdl_lock_valid(const struct redlease_lock *lk)
{
    if (lk->state != RDL_LOCK_HELD) return 0;
    lk = rdl_lock_carrier(lk);
    const rdl_locks *ls = lk->set;
    return lk->state == RDL_LOCK_HELD && lk->confirm_node && rdl_node_ready(lk->confirm_node) &&
           rdl_lock_confirmed_on(lk, lk->confirm_node) && rdl_svc_now(ls->svc) < lk->valid_until;
}
