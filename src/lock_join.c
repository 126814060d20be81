/* SPDX-License-Identifier: MIT */
/* Re-entry (src/lock_int.h; docs/design.md, section 13): one lease shared
 * by several handles of one client. The lease stays with the handle that
 * acquired it, its first handle, which keeps its token, requests and
 * deadlines; a handle that joins it sends nothing and reads the lease
 * through the first (lk->opts->lease), which stays allocated while any
 * handle joined to it is (opts->joined). Here: finding another handle that
 * holds a resource, joining, who else holds a lease, and a loss reaching
 * every handle. The releases are lock_api.c's and the state machine's
 * (lock_fsm.c). */
#include <stddef.h>

#include "lock_int.h"

/* Another handle of this client in HELD on lk's resource, or NULL. A walk
 * of the client's handles, paid only by a contended attempt and by an
 * acquire with re-entry, and not at all while the client holds nothing. */
struct redlease_lock *rdl_lock_own_holder(const struct redlease_lock *lk)
{
    rdl_locks *ls = lk->set;
    if (!ls->stats.held_now) return NULL;
    for (rdl_list *i = ls->locks.next; i != &ls->locks; i = i->next) {
        struct redlease_lock *x = RDL_CONTAINER(i, struct redlease_lock, link);
        if (x != lk && x->state == RDL_LOCK_HELD && rdl_lock_same_key(x, lk)) return x;
    }
    return NULL;
}

/* The same lease's terms: the kind (a semaphore's limit and weight, a
 * shared holder) and a fence or none. */
static int same_kind(const struct redlease_lock *a, const struct redlease_lock *b)
{
    return a->opts->limit == b->opts->limit && a->opts->weight == b->opts->weight &&
           a->opts->shared == b->opts->shared && a->fencing == b->fencing;
}

/* A lease lk may join: held now by a first handle that asked for re-entry
 * too, its on_acquire(REDLEASE_OK) delivered (a lease its user was not
 * told of yet may still be cancelled and deleted), locally valid, of the
 * same kind. */
static struct redlease_lock *joinable(const struct redlease_lock *lk)
{
    rdl_locks *ls = lk->set;
    if (!ls->stats.held_now) return NULL;
    for (rdl_list *i = ls->locks.next; i != &ls->locks; i = i->next) {
        struct redlease_lock *x = RDL_CONTAINER(i, struct redlease_lock, link);
        if (x == lk || x->state != RDL_LOCK_HELD || rdl_lock_joined(x) || x->acq || !x->opts ||
            !x->opts->reentrant || !rdl_lock_same_key(x, lk) || !same_kind(x, lk) ||
            !rdl_lock_valid(x))
            continue;
        return x;
    }
    return NULL;
}

int rdl_lock_try_join(struct redlease_lock *lk, int64_t now)
{
    if (lk->state != RDL_LOCK_ACQUIRING || !lk->opts || !lk->opts->reentrant) return 0;
    struct redlease_lock *first = joinable(lk);
    if (!first) return 0;
    if (lk->op) rdl_lock_abandon_op(lk);
    rdl_lock_unqueue(lk);
    lk->opts->lease = first; /* before HELD: held_now counts the lease once */
    rdl_list_push_back(&first->opts->sharers, &lk->opts->sharers);
    first->opts->joined++;
    rdl_lock_set_state(lk, RDL_LOCK_HELD);
    lk->valid_until = RDL_NEVER; /* the first handle's deadlines are the lease's */
    lk->next_action = RDL_NEVER;
    lk->acq->status = REDLEASE_OK;
    rdl_lock_owe(lk, RDL_NOTIFY_ACQUIRE);
    lk->set->stats.acquired++;
    /* What its own attempts may have set, and its entry in the queue, go:
     * none of them follows this drop. */
    if (lk->maybe_set) rdl_lock_queue_drop(lk, now);
    rdl_lock_emit(lk, REDLEASE_EV_ACQUIRED, REDLEASE_OK, -1, -1, now);
    rdl_lock_reschedule(lk);
    return 1;
}

/* The handle whose options link i is, in a first handle's ring. */
static struct redlease_lock *sharer(const rdl_list *i)
{
    return RDL_CONTAINER(i, struct rdl_lock_opts, sharers)->handle;
}

int rdl_lock_others_hold(const struct redlease_lock *lk)
{
    const struct redlease_lock *first = rdl_lock_carrier(lk);
    if (first != lk && !rdl_lock_carried(first)) return 1; /* its user still has it */
    for (const rdl_list *i = first->opts->sharers.next; i != &first->opts->sharers; i = i->next) {
        const struct redlease_lock *x = sharer(i);
        if (x != lk && x->state == RDL_LOCK_HELD) return 1;
    }
    return 0;
}

struct redlease_lock *rdl_lock_releasing_sharer(const struct redlease_lock *first)
{
    for (const rdl_list *i = first->opts->sharers.next; i != &first->opts->sharers; i = i->next)
        if (sharer(i)->state == RDL_LOCK_RELEASING) return sharer(i);
    return NULL;
}

int rdl_lock_lose_sharers(struct redlease_lock *first, int reason)
{
    int n = 0;
    if (!first->opts) return 0;
    for (rdl_list *i = first->opts->sharers.next; i != &first->opts->sharers; i = i->next) {
        struct redlease_lock *x = sharer(i);
        if (x->state != RDL_LOCK_HELD) continue;
        rdl_lock_set_state(x, RDL_LOCK_DONE);
        x->lost_reason = (int8_t)reason;
        rdl_lock_owe(x, RDL_NOTIFY_LOST);
        x->set->stats.lost++;
        n++;
    }
    return n;
}

void rdl_lock_emit_sharers_lost(struct redlease_lock *first, int reason, int status, int64_t now)
{
    rdl_locks *ls = first->set;
    /* The hook may free the client (every handle then ends at once) or
     * release handles of the ring, which stay allocated until their
     * on_release has run: the ring is walked whole. */
    for (rdl_list *i = first->opts->sharers.next; i != &first->opts->sharers && !ls->svc->dead; i = i->next) {
        struct redlease_lock *x = sharer(i);
        if (x->state == RDL_LOCK_DONE && x->lost_reason == reason && (x->notify & RDL_NOTIFY_LOST))
            rdl_lock_emit(x, REDLEASE_EV_LOST, status, -1, -1, now);
    }
}
