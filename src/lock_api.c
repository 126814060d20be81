/* SPDX-License-Identifier: MIT */
/* The public calls on a lock (include/redlease.h): a new handle
 * (redlease_acquire*() come here through the client), its release, what
 * it reports, and the client's graceful close of it. */
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

/* A lease the user was never told about (on_acquire(OK) still queued) is
 * reported cancelled and deleted, never handed out. */
static void cancel_unannounced(struct redlease_lock *lk, int64_t now)
{
    if (lk->op) rdl_lock_abandon_op(lk);
    rdl_lock_set_state(lk, RDL_LOCK_DONE);
    lk->acq->status = REDLEASE_ECANCELED;
    rdl_lock_queue_drop(lk, now);
}

void rdl_lock_close(struct redlease_lock *lk, int64_t now)
{
    if (lk->state == RDL_LOCK_HELD && rdl_lock_joined(lk)) {
        /* its lease ends for all its handles (the first comes before it
         * in the client's list: this is only a safeguard) */
        lk = lk->opts->lease;
        if (lk->state == RDL_LOCK_HELD) rdl_lock_lose(lk, REDLEASE_LOST_CLOSED, now);
    } else if (lk->state == RDL_LOCK_ACQUIRING) {
        if (lk->op) rdl_lock_abandon_op(lk);
        rdl_lock_finish_acquire(lk, REDLEASE_ECANCELED, now);
    } else if (lk->state == RDL_LOCK_HELD && (lk->notify & RDL_NOTIFY_ACQUIRE)) {
        cancel_unannounced(lk, now);
    } else if (lk->state == RDL_LOCK_HELD) {
        rdl_lock_lose(lk, REDLEASE_LOST_CLOSED, now);
    }
    rdl_lock_reschedule(lk);
}

void rdl_locks_init(rdl_locks *ls, rdl_svc *svc, const rdl_lock_target *target)
{
    ls->svc = svc;
    ls->target = *target;
    ls->fsm = &rdl_lock_fsm;
    rdl_list_init(&ls->locks);
    rdl_list_init(&ls->notify);
}

int rdl_lock_new(rdl_locks *ls, const char *resource, size_t rlen, const redlease_lock_options *o,
                 redlease_acquire_cb on_acquire, redlease_lost_cb on_lost, void *arg,
                 redlease_lock **out)
{
    if (out) *out = NULL;
    if (!resource || !on_acquire || !out) return REDLEASE_EINVAL;
    if (rlen == 0 || rlen > REDLEASE_MAX_RESOURCE) return REDLEASE_EINVAL;
    redlease_lock_options known; /* the caller's, as this library knows them */
    if (!o) redlease_lock_options_init(&known);
    int rc = o ? rdl_lock_options_take(o, &known) : REDLEASE_OK;
    if (rc) return rc;
    o = &known;
    rc = rdl_lock_options_check(o);
    if (rc) return rc;
    int64_t replica_timeout = rdl_replica_timeout(o, ls->command_timeout);
    if (replica_timeout < 0) return REDLEASE_EINVAL;
    if (replica_timeout && !ls->target.replicas) return REDLEASE_EINVAL; /* whose replicas? */
    /* N servers' queues could hand the lock to N different heads: there is
     * no one order to wait in (design 11.5); the default wakes instead */
    if (o->wait_mode == REDLEASE_WAIT_QUEUE && !ls->target.ordered_queue) return REDLEASE_EINVAL;
    /* A semaphore or a shared holder waits in the queue in order (design
     * 12.4, 12.5), or polls: in no order is no order at all for them, and
     * with no one order (a quorum) they poll. Each of a quorum's members
     * admits a semaphore's holders up to its capacity, less than the
     * limit (12.3): a heavier holder could never be admitted. */
    int holders = o->limit || o->shared;
    if (holders && o->wait_mode == REDLEASE_WAIT_WAKE) return REDLEASE_ENOTSUP;
    int64_t capacity = rdl_quorum_capacity(o->limit, ls->target.copies, ls->target.need);
    if (o->limit && (o->weight ? o->weight : 1) > capacity) return REDLEASE_EINVAL;
    if (ls->svc->dead || ls->closing) return REDLEASE_ECANCELED;

    size_t keylen = rdl_key_len(ls->prefix_len, resource, rlen, REDLEASE_KEY_LOCK);
    size_t fence_keylen = o->fencing ? rdl_key_len(ls->prefix_len, resource, rlen, REDLEASE_KEY_FENCE) : 0;
    int rare = o->fencing || replica_timeout || o->max_hold_ms || holders || o->reentrant;
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
        opts->min_replicas = o->replica_acks;
        opts->replica_timeout = (int32_t)replica_timeout;
        opts->limit = o->limit;
        opts->weight = o->weight ? o->weight : 1;
        opts->capacity = (int32_t)capacity;
        opts->shared = o->shared != 0;
        opts->reentrant = o->reentrant != 0;
        opts->handle = lk;
        rdl_list_init(&opts->sharers);
    }
    lk->set = ls;
    lk->node = rdl_lock_route(lk);
    rdl_list_init(&lk->link);
    rdl_list_init(&lk->notify_link);
    lk->user_ref = 1;
    rdl_lock_set_state(lk, RDL_LOCK_ACQUIRING);
    acq->on_acquire = on_acquire;
    lk->on_lost = on_lost;
    lk->arg = arg;
    lk->ttl = (int32_t)o->ttl_ms;
    lk->renew_interval = (int32_t)(o->renew_interval_ms == 0 ? o->ttl_ms / 3 : o->renew_interval_ms);
    acq->max_attempts = o->wait_max_attempts;
    lk->fencing = o->fencing != 0;
    /* The default is the queue (docs/design.md, section 11).
     * A single attempt (wait_ms 0) joins no queue and goes as a plain SET
     * NX, which finds a lock handed to a waiter taken; its release hands
     * the lock over too. */
    lk->queued = o->wait_mode != REDLEASE_WAIT_POLL && ls->waker && !(holders && !ls->target.ordered_queue);
    /* with no one order to wait in the default is REDLEASE_WAIT_WAKE
     * (above), and a semaphore's or shared holder's is REDLEASE_WAIT_POLL */
    lk->unordered = o->wait_mode == REDLEASE_WAIT_WAKE || !ls->target.ordered_queue;
    acq->joins = lk->queued && o->wait_ms != 0;
    acq->queue_asked = acq->joins && o->wait_mode != REDLEASE_WAIT_DEFAULT;
    rdl_list_init(&acq->waiter.link);
    acq->waiter.token = lk->token;
    acq->waiter.owner = lk;
    acq->recheck_at = RDL_NEVER;
    lk->wait_fsync = o->replica_fsync != 0;
    lk->renewal_acks = o->replica_scope == REDLEASE_REPLICA_SCOPE_ALL;
    rdl_backoff_init(&acq->backoff, o->wait_jitter, o->wait_retry_base_ms, o->wait_retry_max_ms);
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

/* A compare-and-delete of the lease, by its first handle, for lk. */
static void release_lease(struct redlease_lock *lk, int64_t now)
{
    rdl_locks *ls = lk->set;
    if (lk->op) rdl_lock_abandon_op(lk); /* a renewal in flight goes stale */
    rdl_lock_set_state(lk, RDL_LOCK_RELEASING);
    lk->op_limit = now + ls->command_timeout; /* retries end there */
    rdl_lock_start_op(lk, RDL_REQ_RELEASE, now);
    rdl_lock_reschedule(lk);
}

/* The release of a held handle that shares its lease (re-entry): 1 when
 * done here. While another handle holds the lease, lk's release touches
 * nothing in Redis: on_release(OK), and a first handle carries the lease
 * on for those joined to it. The last handle's release is the lease's,
 * which the first handle makes and lk hears the outcome of. */
static int release_shared(struct redlease_lock *lk, int64_t now)
{
    if (!rdl_lock_joined(lk) && !(lk->opts && lk->opts->joined)) return 0;
    if (rdl_lock_joined(lk) && (lk->notify & RDL_NOTIFY_ACQUIRE)) {
        /* not told yet: it ends cancelled, and the lease is the others' */
        lk->acq->status = REDLEASE_ECANCELED;
        rdl_lock_finish_release(lk, REDLEASE_OK, now);
        return 1;
    }
    if (!rdl_lock_joined(lk) && (lk->notify & RDL_NOTIFY_ACQUIRE)) return 0; /* nobody joined it yet */
    if (rdl_lock_others_hold(lk)) {
        if (rdl_lock_joined(lk)) {
            rdl_lock_finish_release(lk, REDLEASE_OK, now);
        } else {
            /* its user's handle ends; the lease goes on, renewed, for the others */
            lk->opts->carried = 1;
            rdl_lock_report_release(lk, REDLEASE_OK, now);
        }
        return 1;
    }
    if (!rdl_lock_joined(lk)) return 0; /* the last holder: its own release */
    rdl_lock_set_state(lk, RDL_LOCK_RELEASING); /* until the first handle's ends */
    release_lease(lk->opts->lease, now);
    return 1;
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
        if (lk->ended && lk->user_ref) { /* else ending it will rdl_lock_owe it */
            lk->release_status = rdl_lock_done_release_status(lk);
            rdl_lock_owe(lk, RDL_NOTIFY_RELEASE);
        }
        return REDLEASE_OK;
    }
    rdl_svc_enter(ls->svc);
    int64_t now = rdl_svc_now(ls->svc);
    lk->release_called = 1;
    lk->on_release = on_release;
    lk->release_arg = arg;
    /* rdl_lock_finish_acquire() and cancel_unannounced() can reach the event hook,
     * which may free the client: then the handle has been ended (its
     * on_release(ECANCELED) delivered) and nothing more is owed. */
    switch (lk->state) {
    case RDL_LOCK_ACQUIRING:
        if (lk->op) rdl_lock_abandon_op(lk);
        rdl_lock_finish_acquire(lk, REDLEASE_ECANCELED, now);
        if (!ls->svc->dead) rdl_lock_finish_release(lk, REDLEASE_OK, now);
        break;
    case RDL_LOCK_HELD:
        if (release_shared(lk, now)) break;
        if (lk->notify & RDL_NOTIFY_ACQUIRE) {
            cancel_unannounced(lk, now);
            if (!ls->svc->dead) rdl_lock_finish_release(lk, REDLEASE_OK, now);
            break;
        }
        release_lease(lk, now);
        break;
    default: /* DONE: failed, cancelled or lost */
        rdl_lock_finish_release(lk, rdl_lock_done_release_status(lk), now);
        break;
    }
    if (!ls->svc->dead) rdl_lock_reschedule(lk);
    rdl_svc_leave(ls->svc);
    return REDLEASE_OK;
}

/* A handle joined to another's lease (re-entry) reports the lease's: its
 * first handle, kept allocated as long as the joined one is. */
int redlease_lock_held(const redlease_lock *lk) { return lk && rdl_lock_valid(lk); }

int64_t redlease_lock_remaining_ms(const redlease_lock *lk)
{
    if (!redlease_lock_held(lk)) return 0; /* one rule for both */
    int64_t left = rdl_lock_carrier(lk)->valid_until - rdl_svc_now(lk->set->svc);
    return left > 0 ? left : 0;
}

const char *redlease_lock_token(const redlease_lock *lk) { return lk ? rdl_lock_carrier(lk)->token : NULL; }
const char *redlease_lock_key(const redlease_lock *lk) { return lk ? lk->key : NULL; }
size_t redlease_lock_key_len(const redlease_lock *lk) { return lk ? lk->keylen : 0; }
uint64_t redlease_lock_fence(const redlease_lock *lk)
{
    lk = lk ? rdl_lock_carrier(lk) : NULL;
    return lk && lk->opts ? lk->opts->fence : 0;
}
redlease_client *redlease_lock_client(const redlease_lock *lk) { return lk ? lk->set->svc->client : NULL; }
