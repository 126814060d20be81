/* SPDX-License-Identifier: MIT */
/* What the lock layer's files share: one module split by job into layers,
 * each calling only those before it: lock_handle.c (bookkeeping, delivery,
 * reading replies), lock_send.c (commands and the op engine), lock_join.c
 * (re-entry: handles sharing a lease), lock_fsm.c (the state machine), lock_reply.c (the request handler, fallbacks,
 * moves), lock_api.c (the calls on a lock). These are its own, never
 * called from outside it (src/lock.h is what the client uses). Each is
 * described where it is defined. */
#ifndef REDLEASE_LOCK_INT_H
#define REDLEASE_LOCK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"
#include "node.h"
#include "req.h"
#include "transport.h"

static inline int64_t rdl_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The node the lock's key goes to now, as its target routes it. */
static inline rdl_node *rdl_lock_route(const struct redlease_lock *lk)
{
    const rdl_lock_target *t = &lk->set->target;
    return t->route(t->arg, lk->key, lk->keylen);
}

/* The handler of every request a lock makes (its req->ops): the layers
 * below hand its replies back through it (lock_reply.c). */
extern const rdl_req_ops rdl_lock_req_ops;

/* What the op engine (lock_send.c) tells the state machine above it, through
 * the table the state machine registers (rdl_lock_fsm, lock_fsm.c; put in
 * every set by rdl_locks_init()): a send that failed for good ends the op,
 * a server that refused us ends what waits for it. */
typedef struct rdl_lock_fsm_ops {
    void (*op_failed)(struct redlease_lock *lk, int status, int definite, int cut, int64_t now);
    void (*refused)(struct redlease_lock *lk, int status, int64_t now);
} rdl_lock_fsm_ops;
extern const rdl_lock_fsm_ops rdl_lock_fsm;

/* lock_handle.c: bookkeeping, delivery, reading replies */
void rdl_lock_reschedule(struct redlease_lock *lk);
void rdl_lock_set_state(struct redlease_lock *lk, int state);
void rdl_lock_set_release_retry(struct redlease_lock *lk, unsigned on);
void rdl_lock_owe(struct redlease_lock *lk, unsigned bit);
void rdl_lock_emit(struct redlease_lock *lk, int type, int status, int64_t rtt, int64_t retry_in,
                 int64_t now);
void rdl_lock_park(struct redlease_lock *lk);
void rdl_lock_unpark(struct redlease_lock *lk);
void rdl_lock_unqueue(struct redlease_lock *lk);
void rdl_lock_maybe_free(struct redlease_lock *lk);
void rdl_lock_unref(struct redlease_lock *lk);
int rdl_lock_done_release_status(const struct redlease_lock *lk);
int rdl_lock_from_elsewhere(const struct redlease_lock *lk, const rdl_req *req);
int rdl_lock_is_wrongtype(const rdl_reply *r);
int rdl_lock_reply_failure(rdl_locks *ls, const rdl_node *from, const rdl_reply *r, int *definite);
int rdl_lock_confirmed_on(const struct redlease_lock *lk, const rdl_node *n);
/* Held and locally valid now, its lease confirmed on a ready link
 * (redlease_lock_held()'s rule; a joined handle's is its lease's). */
int rdl_lock_valid(const struct redlease_lock *lk);

/* lock_send.c: commands and the op engine */
void rdl_lock_abandon_op(struct redlease_lock *lk);
int64_t rdl_lock_queue_next_check(struct redlease_lock *lk, int64_t now);
int rdl_lock_req_submit(rdl_req *req);
/* req's server refused its script (learned from the answer): it goes
 * again without one (0), or a status when its lease needs one. */
int rdl_lock_req_scriptless(rdl_req *req);
int rdl_lock_send_req(struct redlease_lock *lk, int kind, int64_t now);
void rdl_lock_pump(struct redlease_lock *lk, int64_t now);
void rdl_lock_queue_drop(struct redlease_lock *lk, int64_t now);
int64_t rdl_lock_op_limit(const struct redlease_lock *lk);
int rdl_lock_send_ack(struct redlease_lock *lk, int op, const rdl_req *write, uint64_t fence,
                    int64_t now);
void rdl_lock_start_op(struct redlease_lock *lk, int op, int64_t now);
void rdl_lock_set_node(struct redlease_lock *lk, rdl_node *n, int64_t now);

/* lock_join.c: re-entry, handles sharing a lease */
/* Another handle of this client holding lk's resource, or NULL. */
struct redlease_lock *rdl_lock_own_holder(const struct redlease_lock *lk);
/* lk (acquiring, with re-entry) joins a lease of this client it may share:
 * 1 (on_acquire(OK) owed, nothing sent), or 0. */
int rdl_lock_try_join(struct redlease_lock *lk, int64_t now);
/* 1 when a handle of lk's lease other than lk still holds it (its first
 * handle, unless carried, or one joined to it). */
int rdl_lock_others_hold(const struct redlease_lock *lk);
/* The handle joined to first whose release first's release is for. */
struct redlease_lock *rdl_lock_releasing_sharer(const struct redlease_lock *first);
/* first lost its lease: each handle joined to it that held it is lost
 * too for reason (its on_lost owed); how many. No event yet: */
int rdl_lock_lose_sharers(struct redlease_lock *first, int reason);
/* their EV_LOST, once every handle's state is settled (the hook may end
 * the client). */
void rdl_lock_emit_sharers_lost(struct redlease_lock *first, int reason, int status, int64_t now);

/* lock_fsm.c: the state machine */
void rdl_lock_finish_acquire(struct redlease_lock *lk, int status, int64_t now);
void rdl_lock_attempt_ended(struct redlease_lock *lk, int status, int definite, int cut, int64_t now);
void rdl_lock_acquire_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r,
                          int current, int64_t now);
void rdl_lock_lose(struct redlease_lock *lk, int reason, int64_t now);
void rdl_lock_renew_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r, int current,
                        int64_t now);
void rdl_lock_ack_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r, int current,
                      int64_t now);
void rdl_lock_finish_release(struct redlease_lock *lk, int status, int64_t now);
/* on_release(status) owed to lk's user, counted and told (EV_RELEASED). */
void rdl_lock_report_release(struct redlease_lock *lk, int status, int64_t now);
void rdl_lock_release_reply(struct redlease_lock *lk, const rdl_req *req, const rdl_reply *r, int64_t now);
void rdl_lock_op_failed(struct redlease_lock *lk, int status, int definite, int cut, int64_t now);

#endif
