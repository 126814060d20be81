/* SPDX-License-Identifier: MIT */
/* The model check of the core. One program drives up to twelve leases on two
 * resources through steps that the driver chooses (model.h): acquires with
 * chosen options (each waiting by one of the three modes: the queue, its
 * unordered kind, polling; a resource is a mutex, or in some runs a
 * counting semaphore of 1 to 3 permits whose leases, of weights 1 to the
 * limit, wait in its queue or poll, or shared/exclusive, whose leases are
 * shared holders, waiting in its queue or polling, or mutexes, its
 * exclusive holders; now and then a lease is of another kind or limit;
 * one in three asks for re-entry, half of those with the terms of a live
 * handle that asked for it too, so that it joins that handle's lease
 * when it holds: docs/design.md, section 13; all the client's handles
 * share one holder's record, and are still as many holders as leases),
 * releases (also from inside the event hook), the model's Redis
 * executing the oldest command sent and, separately, the oldest executed
 * reply being delivered (time may pass between send, execution and
 * delivery), time passing, process pauses (the clock jumps and the timer
 * may not have run yet when the next reply is read), broken connections
 * and reconnects, NOSCRIPT phases, error replies (OOM, LOADING, BUSY,
 * READONLY, NOSCRIPT), a competitor writing the keys, keys lost (a restart
 * without persistence, an eviction of a lock key, of a queue's key or of a
 * set of holders' key), and the client ended by redlease_client_close() or
 * redlease_client_free() with live handles (also from inside the event
 * hook).
 *
 * The model's Redis fixes a command's effect and reply when it executes
 * it; a key set or renewed with PX p at time e expires at e + p, or, when
 * the run's server clock runs fast, at e + p - (p/100 + 2): the most
 * drift the contract allows (man 3 redlease, TIMING: local validity is
 * t0 + ttl - drift).
 *
 * It keeps each resource's queue (docs/design.md, section 11; the Lua of
 * RDL_SCRIPT_QUEUE_ACQUIRE and _RELEASE in src/scripts.c, written again
 * here): a sorted set of waiting tokens and a hash of their entries
 * (deadline in the server's TIME, claim, channel), two keys with their
 * own TTLs that an eviction may take one at a time; the queued acquire
 * (take the key when it holds our token, or is free with nobody alive
 * ahead, leaving the queue, or in no order staying in it and joining;
 * hand a free key to a live head that is not us; else join or refresh
 * and answer -(pttl + 1)), the queued release (leave,
 * compare-and-delete, hand over to the live head for its claim with "g"
 * to it and "c TOKEN k*claim" to the next three, or the next one when a
 * listener had the "g" (PUBLISH counts it); unordered: "c TOKEN 0" to
 * the live head; nobody queued: the plain compare-and-delete), the fence
 * minted by the take. Strangers (another client's waiters, on a channel
 * of their own) join the queues and may take what is handed to them. The
 * server's TIME can be stepped (a wall clock). Words go to the client's
 * subscriber link (the fake's side link) only while the server has its
 * SUBSCRIBE on that link: the link connects (or fails to), the server runs
 * the SUBSCRIBE (or refuses it, an ACL), pushes wait in the socket in
 * order and are read later (one at a time, or a read of several as the
 * transport brackets it), the link breaks (what was unread is lost, as is
 * what is published meanwhile), PUBLISH may be refused (an ACL), and
 * words the queue never published (a stranger's token, a finished
 * handle's, garbage, a false hint to a waiter) are read too.
 *
 * It keeps each resource's semaphore (docs/design.md, section 12; the Lua
 * of RDL_SCRIPT_SEM_* written again here): the kind in the lock key
 * ("semaphore N"), the holders (token -> deadline, the server's TIME plus
 * the TTL, as early as a PX on a fast server clock) and their weights
 * with "used", three keys with TTLs of their own (the last holder's
 * deadline) that an eviction may take one at a time. Every script first
 * prunes the holders whose deadline came. The acquire refuses another kind
 * or limit before it writes (KIND, naming what it found), counts its own
 * token once (as a newcomer's when its weight is gone), admits nobody past
 * a live waiter ahead in the queue (joining it, with a channel), wakes the
 * next waiter when admitted from the head with permits left, answers full
 * with the time to the first holder's deadline, mints the fence; the
 * renewal is strict (never puts a holder back, nor renews one without a
 * weight or under a kind of another limit); the release leaves the queue,
 * gives the weight back and wakes the head (its entry cut to a claim). The
 * mutex's acquire scripts answer KIND on a semaphore's key. A step of the
 * server's TIME moves the holders and the semaphore's keys with it.
 *
 * It keeps each resource's shared holders in the same three keys
 * (docs/design.md, 12.4; the Lua of RDL_SCRIPT_SHARED_* written again
 * here): the kind "shared", the holders, their weights (1 each) and
 * "used". The shared acquire refuses a semaphore (KIND) and waits beside an
 * exclusive holder's token; beside shared holders, or none, it admits a
 * newcomer only with no live waiter ahead in the queue, which it joins
 * otherwise (its channel written with "{" in front), handing a resource
 * nobody holds to that waiter; one admitted from the head reminds the next
 * when that one is shared; its own token is ours, its deadline restarted.
 * The renewal is the semaphore's, limit 0 wanting the kind "shared"; the
 * release leaves the queue, drops the holder while the kind is "shared",
 * and hands a resource left free to the queue's head. A shared head is
 * never handed the lock key (it is no key to give): hand_over() reminds
 * it, as remind_head() does, and the mutex's queued release reminds one
 * when the key holds "shared". The mutex's scripts find "shared" taken
 * (busy, or waiting in the queue), never their own; a semaphore's acquire
 * refuses it. Now and then a stranger waits as a shared waiter, which
 * never comes when reminded: its place goes after a claim.
 *
 * Checked, after every step, inside every event, and at every moment a key
 * expires, a holder (a semaphore's, a shared one) reaches its deadline or
 * an exemption ends while time passes:
 *   - held() implies the key holds our token now (a mutex's); except,
 *     after the key was wiped, until the local deadline that commands
 *     executed before the wipe could give (a single Redis cannot do
 *     better), only on the link those were confirmed on, and not once a
 *     renewal was answered 0 (the library has been told);
 *   - a handle told it holds the lock (its deadline ahead, not released,
 *     not lost, no renewal answered 0) never sees the key hold another
 *     token, link up or not (same wipe exemption);
 *   - a semaphore's or shared holder's handle told it holds, or held(), is
 *     counted by the server: the lock key is its kind, its token a holder
 *     whose deadline (the server's clock) has not come, a semaphore's
 *     weight in the hash (a shared holder's weight keeps nobody out: the
 *     kind does) (the same wipe exemption, also after the server's TIME
 *     was stepped forward): on_lost comes before the server lets the
 *     permits go, or lets an exclusive holder in;
 *   - the handles that believe they hold a resource (told so, or held()),
 *     but those excused, are one mutex's (an exclusive holder is never
 *     beside a shared one), shared holders alone, or semaphores' whose
 *     weights stay within the limit; handles that share a lease
 *     (re-entry: its token) count as one holder, any other handle of the
 *     same client as another;
 *   - re-entry: a handle joins a lease (it reports the lease's token) only
 *     when it and the lease's first handle both asked for it, on one
 *     resource, of one kind, weight and fencing, the first told it holds
 *     it and the lease held (held() 1, neither lost nor past its deadline);
 *     the join sends nothing (its EV_ACQUIRED has rtt -1 and the lease's
 *     validity), its on_acquire is OK (or ECANCELED, released before it
 *     came), from the loop, with the lease's fence; every handle of a lease
 *     not released sees the same held(), validity left, token and fence;
 *     the lease's validity, losses, confirmations and exemptions are each
 *     of its handles' (the checks above and below read them there); a
 *     lease lost reaches the on_lost of every handle that held it, once,
 *     by the next run of the timer; what the joiner's own attempts set is
 *     dropped as after a failed acquire (below); and the lease's key is
 *     deleted only once no handle of it holds it (a release with another
 *     handle holding on gets on_release(OK) with nothing deleted);
 *   - each command is of its lease's kind (a semaphore's scripts, a shared
 *     holder's acquire and release and the holders' renewal with limit 0,
 *     the mutex's commands and the server's conditional ones, each for its
 *     own kind only), and a renewal names its lease's limit;
 *   - fences strictly increase over each resource's acquisitions, of
 *     any kind, and only a fenced lease gets one;
 *   - held() implies the link is up;
 *   - held() implies now is before the deadline the library reported;
 *   - once the timer has run at or past that deadline, on_lost has run
 *     (unless the lease's release was asked for);
 *   - a confirmation comes in time: an acquire reports validity left, a
 *     renewal is confirmed before the deadline it extends;
 *   - losses are explained: EXPIRED not before the deadline, NOT_OWNER only
 *     after a renewal answered 0, CLOSED only when the client ends; an
 *     error answered to a renewal is no loss;
 *   - on_acquire once, before anything else, with a status explained by
 *     what Redis answered (EBUSY after contention, EREDIS after an error,
 *     EKIND after a KIND, ECANCELED after a release or the client's end),
 *     and EKIND (or ECANCELED) once a live attempt was answered KIND: the
 *     other kind is definite, whatever the wait left; on_lost at most once
 *     and only after on_acquire(OK); on_release once and last; none of them
 *     inside the call that started it, nor after the client ended;
 *   - on_release(OK) of a held lease comes only after a compare-and-delete
 *     of its token deleted its key (a queue release's probe that found a
 *     queue deletes nothing), unless another handle of its lease held it
 *     when the release was asked for (re-entry);
 *   - a word for a token that waits for nothing (a finished handle's, a
 *     stranger's, one never issued, garbage) finds no waiter;
 *   - close and free: every live handle got on_acquire, every release
 *     its on_release, every held lease on_lost; the close callback runs
 *     once, also when a free cuts the close short (then inside the free);
 *     inside free a callback's acquire returns ECANCELED and its release
 *     OK, with on_release before free returns;
 * then, if the client still runs, a quiet phase (QUIET_MS: no faults, every
 * command run and read at once, every link made at once, every push read
 * at once, no new acquire; now and then a holder releases): a lock key is
 * never free, while the link is up, for longer than the longest sleep of
 * a mutex's handle waiting for it (a third of its entry's life in the
 * queue, its backoff's cap outside it; a semaphore's waiters are left
 * out: with its holders' key lost, its weights may rightly keep it full,
 * nobody holding, until they expire; so are shared waiters: with the kind
 * lost and holders left in the set, a shared acquire hands nothing over,
 * and may rightly wait for a dead exclusive head's entry to die) - the
 * live head of a free lock is served (a shared head that a reminder cut
 * to a claim is, until that claim ends, as a lock handed to an exclusive
 * head is), and no waiter sleeps through a free lock waiting for a word; a
 * shared waiter with the way open to it (the lock key free or "shared",
 * no live waiter ahead of it in the queue) enters within its longest
 * sleep; and a waiter that read a "g" the queue published has taken the
 * lock handed to it once what it sent has run. While the client settles at the
 * end, each time all it sent has run: no key holds the token of a lease
 * whose acquire failed, or of a handle's own attempts before it joined a
 * lease (unless Redis refused that delete, or the key was
 * handed to it by a queue and its drop never ran, the link having been
 * down when it failed or broken since: a drop is given up after the
 * lease's TTL, an entry lives max(ttl, 1 s)), no queue holds a live entry
 * of it (same exemptions), and no set of holders (a semaphore's, shared
 * ones) a live holder of it (unless Redis refused that delete, or it ran
 * with the kind key lost: the script then answers 0 and leaves the holder
 * to its deadline); and at the end
 * (after releasing everything): every release answered, no handle left,
 * no allocation left.
 *
 * The liveness checks hold only in the quiet phase: while faults go on, a
 * waiter may rightly wait for ever (a holder that renews, words lost, a
 * link down). In the quiet phase every command is answered at the moment
 * it is sent, so a waiter's next attempt, due by its own timer or at once
 * on a word, runs when due; nothing else may delay it.
 *
 * This file has the driver's choices, the leases, the checks, the client's
 * end, the callbacks, the steps and the quiet phase; the model's Redis (its
 * keys, queues, semaphores and shared holders, the commands it runs, keys
 * lost, other clients' waiters) is in model_redis.c, the client's subscriber link in model_pubsub.c;
 * model_internal.h is what they share. */
#include "model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "model_internal.h"

model_reach model_reached;


static const model_driver *drv;
int R(int n) { return (int)drv->choose(drv->ctx, (uint32_t)n); }
static uint32_t rng_fn(void *arg)
{
    (void)arg;
    return drv->bits(drv->ctx);
}

fake F;
int64_t command_timeout; /* the client's command_timeout_ms */
static int bad;
enum { RUNNING, CLOSING, FREED };
static int ending; /* RUNNING, or how the client was ended */

/* Counts a violated invariant and tells the driver what it was. */
void violation(const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    bad++;
    drv->violated(drv->ctx, what);
}

/* The local validity of man 3 redlease, TIMING: a confirmation sent at
 * t0 is good until t0 + ttl - drift. Written here, not taken from
 * lease_math.h, so that a mistake there is found. */
int64_t contract_drift(int64_t ttl) { return ttl / 100 + 2; }
int64_t contract_until(int64_t t0, int64_t ttl) { return t0 + ttl - contract_drift(ttl); }

/* ---------------------------------------------------------- the leases */

lease L[NL];

/* A lease is active while a handle of it is alive: its first handle's,
 * or one joined to it (its first handle then carries it on, released by
 * its user: docs/design.md, section 13). */
int lease_active(const lease *l)
{
    if (l->alive) return 1;
    for (int i = 0; i < NL; i++)
        if (L[i].alive && L[i].of == l) return 1;
    return 0;
}

/* An active lease by its token: a handle's own (a joined handle's events
 * carry the token of the lease it joined, whose first handle is found). */
lease *by_token(const char *token)
{
    for (int i = 0; i < NL; i++)
        if (L[i].token[0] && strcmp(L[i].token, token) == 0 && lease_active(&L[i])) return &L[i];
    return NULL;
}

/* Each slot is used once per run: a token names one lease, alive or not. */
lease *by_token_any(const char *token)
{
    for (int i = 0; i < NL; i++)
        if (L[i].token[0] && strcmp(L[i].token, token) == 0) return &L[i];
    return NULL;
}

/* ------------------------------------------------------------ the checks */

/* Told it holds: its deadline ahead, nothing since that says it ended. */
static int told_held(const lease *l)
{
    const lease *s = lease_of(l); /* a joined handle is told what its lease is */
    return s->deadline >= 0 && F.now < s->deadline && !l->release_called && !s->lost_ev &&
           !s->saw_renew_zero && ending == RUNNING;
}

/* What the handles that believe they hold a resource hold (told so, or
 * held()), but those excused by a key lost. */
typedef struct tally {
    int holders, mutexes, shared, weight, limit; /* weight, limit: the semaphores' (the least limit) */
    const lease *leases[NL];                     /* the leases counted: handles of one count once */
} tally;

/* Counts l's lease once: the handles of one lease (re-entry) are one
 * holder, with one token; handles of one client that did not join are as
 * many holders as leases. */
static void count_believer(tally *t, const lease *l)
{
    l = lease_of(l);
    for (int i = 0; i < t->holders; i++)
        if (t->leases[i] == l) return;
    t->leases[t->holders++] = l;
    t->mutexes += !in_holders(l);
    t->shared += l->shared;
    if (!l->limit) return;
    t->weight += l->weight;
    if (!t->limit || l->limit < t->limit) t->limit = l->limit;
}

/* A resource is believed held by one mutex's handle (an exclusive holder,
 * on a shared resource: never beside a shared one), by shared holders
 * alone, or by a semaphore's whose weights stay within its limit (the
 * least, should two meet). */
static void check_permits(const tally *t, int r)
{
    if (t->mutexes ? t->holders > 1 : t->shared ? t->holders > t->shared : t->weight > t->limit)
        violation("lock:{r%d} believed held by %d handles (%d mutexes, %d shared), weight %d of %d (t=%lld)", r,
                  t->holders, t->mutexes, t->shared, t->weight, t->limit, (long long)F.now);
}

/* Re-entry (docs/design.md, section 13): a handle that joined a lease
 * reports its token (redlease_lock_token()), which is how the model learns
 * of the join, at the EV_ACQUIRED the join emits at once (checked in the
 * hook before the event is read, and after every step). A join is right
 * only between two handles that both asked for re-entry, of one resource
 * and one kind (limit, weight, shared) and fencing, to a lease whose first
 * handle was told it holds it and that is held now, neither lost nor
 * past its deadline; it sends nothing (rtt -1, checked in the hook).
 * Returns the handle that joined last, or NULL. */
static lease *note_joins(void)
{
    lease *last = NULL;
    for (int i = 0; F.c && i < NL; i++) {
        lease *l = &L[i];
        if (!l->alive || !l->lk || l->of || !l->token[0]) continue;
        const char *tok = redlease_lock_token(l->lk);
        if (!tok || strcmp(tok, l->token) == 0) continue;
        lease *s = by_token_any(tok);
        if (!s || s->of) {
            violation("lease %d reports token %s, of no lease it could have joined", i, tok);
            continue;
        }
        l->of = s;
        l->acq_done = 1;
        /* what its own attempts set goes: its drop is behind them */
        l->failed_ev = 1;
        l->drop_ran = 0;
        l->fail_links = links;
        l->fail_up = F.connected;
        s->had_joiners = 1;
        model_reached.joins++;
        if (l->attempts) model_reached.joins_waited++;
        if (!s->alive) model_reached.joins_carried++;
        if (l->beside == s) model_reached.joins_raced++;
        last = l;
        if (l->acq || !l->reentrant || !s->reentrant || l->res != s->res || l->limit != s->limit ||
            l->weight != s->weight || l->shared != s->shared || l->fenced != s->fenced)
            violation("lease %d (reentrant %d, r%d, limit %d, weight %d, shared %d, fenced %d) joined lease %d "
                      "(reentrant %d, r%d, limit %d, weight %d, shared %d, fenced %d)",
                      i, l->reentrant, l->res, l->limit, l->weight, l->shared, l->fenced, (int)(s - L),
                      s->reentrant, s->res, s->limit, s->weight, s->shared, s->fenced);
        if (!s->acq_ok || s->lost_ev || s->deadline < 0 || F.now >= s->deadline ||
            !redlease_lock_held(l->lk))
            violation("lease %d joined lease %d, not held now (told %d, lost %d, deadline %lld, held() %d, t=%lld)",
                      i, (int)(s - L), s->acq_ok, s->lost_ev, (long long)s->deadline, redlease_lock_held(l->lk),
                      (long long)F.now);
    }
    return last;
}

/* A handle joined to a lease (re-entry) sees what every other handle of
 * it that has not been released sees: held(), the validity left, the
 * token and the fence are the lease's. */
static void check_same_view(int i)
{
    const lease *l = &L[i], *s = lease_of(l);
    if (!l->of || l->release_called) return;
    const lease *o = s->alive && s->lk && !s->release_called ? s : NULL;
    for (int j = 0; !o && j < i; j++)
        if (L[j].alive && L[j].lk && L[j].of == s && !L[j].release_called) o = &L[j];
    if (!o) return;
    if (redlease_lock_held(l->lk) != redlease_lock_held(o->lk) ||
        redlease_lock_remaining_ms(l->lk) != redlease_lock_remaining_ms(o->lk) ||
        redlease_lock_fence(l->lk) != redlease_lock_fence(o->lk) ||
        strcmp(redlease_lock_token(l->lk), redlease_lock_token(o->lk)) != 0)
        violation("leases %d and %d share a lease and see it differently: held %d/%d, %lld/%lld ms left (t=%lld)",
                  i, (int)(o - L), redlease_lock_held(l->lk), redlease_lock_held(o->lk),
                  (long long)redlease_lock_remaining_ms(l->lk), (long long)redlease_lock_remaining_ms(o->lk),
                  (long long)F.now);
}

static void check_held(void)
{
    tally believed[2] = {{0}};
    note_joins();
    for (int i = 0; F.c && i < NL; i++) {
        lease *l = &L[i];
        if (!l->alive || !l->lk) continue;
        const lease *s = lease_of(l); /* its lease: its own, or the one it joined */
        int told = told_held(l), held = redlease_lock_held(l->lk), excused = F.now < s->exempt_until;
        if ((told || held) && !excused) count_believer(&believed[l->res], l);
        check_same_view(i);
        /* told held: a mutex's key is ours or gone, never another's; a
         * semaphore's or shared holder is counted by the server (its
         * deadline there has not come: on_lost comes first) */
        if (told && !excused) {
            kv *e = in_holders(l) ? NULL : find(l->key, F.now);
            if (e && !owns_val(e->val, s->token))
                violation("lease %d told held until %lld, but %s holds %s (t=%lld)", i,
                          (long long)s->deadline, l->key, e->val, (long long)F.now);
            if (in_holders(l) && !holder_counts(s))
                violation("lease %d told held until %lld, but the %s %s does not count it (t=%lld)", i,
                          (long long)s->deadline, l->shared ? "shared resource" : "semaphore", l->key,
                          (long long)F.now);
        }
        if (!held) continue;
        if (!F.connected)
            violation("%s held with the link down (t=%lld)", l->key, (long long)F.now);
        if (s->deadline < 0 || F.now >= s->deadline)
            violation("%s held at t=%lld, its deadline %lld", l->key, (long long)F.now,
                      (long long)s->deadline);
        kv *e = find(l->key, F.now);
        if (in_holders(l) ? holder_counts(s) : e && owns_val(e->val, s->token)) continue;
        if (F.now < s->exempt_until && s->exempt_link == links) {
            model_reached.held_on_wiped++;
            if (l->limit) model_reached.sem_excused++;
            if (l->shared) model_reached.shared_excused++;
        } else {
            violation("held but %s is not ours (t=%lld)", l->key, (long long)F.now);
        }
    }
    for (int r = 0; r < 2; r++) check_permits(&believed[r], r);
}
/* The timer has run at this moment: a held lease past its deadline must
 * have heard on_lost by now (unless its release was asked for). */
static void check_told_in_time(void)
{
    for (int i = 0; F.c && i < NL; i++) {
        const lease *l = &L[i], *s = lease_of(l);
        if (!l->alive || !l->acq_ok || l->lost || l->release_called) continue;
        if (s->deadline >= 0 && F.now >= s->deadline)
            violation("%s past its deadline %lld at t=%lld without on_lost", l->key,
                      (long long)s->deadline, (long long)F.now);
        /* a lease lost reaches every handle of it that held it, each once
         * (re-entry: its first handle's and those joined to it) */
        else if (s->lost_ev && ending == RUNNING)
            violation("lease %d: its lease %s was lost and it got no on_lost (t=%lld)", i, s->token,
                      (long long)F.now);
    }
}

/* What the events say about a lease's deadline, checked as they happen. */
static void check_event(lease *l, const redlease_event *ev)
{
    long long now = (long long)F.now;
    switch (ev->type) {
    case REDLEASE_EV_ACQUIRED:
        if (ev->remaining_ms <= 0)
            violation("%s acquired with no validity left (t=%lld)", l->key, now);
        l->deadline = F.now + ev->remaining_ms;
        l->acq_done = 1;
        break;
    case REDLEASE_EV_ATTEMPT:
        l->attempts++;
        l->attempt_at = F.now;
        l->attempt_failed = 0;
        break;
    case REDLEASE_EV_ATTEMPT_FAILED:
        l->attempt_failed = 1;
        break;
    case REDLEASE_EV_ACQUIRE_FAILED: /* its drop, if it sends one, was queued first */
        l->acq_done = l->failed_ev = 1;
        l->drop_ran = 0;
        l->fail_links = links;
        l->fail_up = F.connected;
        break;
    case REDLEASE_EV_RENEWED:
        if (l->deadline < 0 || F.now >= l->deadline)
            violation("renewal of %s confirmed at t=%lld, after its deadline %lld", l->key, now,
                      (long long)l->deadline);
        l->deadline = F.now + ev->remaining_ms;
        break;
    case REDLEASE_EV_LOST:
        l->lost_ev = 1;
        if (ev->lost_reason == REDLEASE_LOST_EXPIRED && (l->deadline < 0 || F.now < l->deadline))
            violation("%s lost (expired) at t=%lld, before its deadline %lld", l->key, now,
                      (long long)l->deadline);
        break;
    case REDLEASE_EV_RENEW_FAILED:
        if (ev->status == REDLEASE_EREDIS) model_reached.renew_eredis++;
        break;
    default: break;
    }
}

/* ------------------------------------------------------- the client's end */

static int over;   /* the client has ended: no callback may come now */
static int close_cbs;
static int close_cut; /* a free came while the close was under way */
static int draining;
static lease stray; /* arg of an acquire that should have been refused */

/* The client ended (close callback, or free returned): every live handle
 * has had its last word. */
static void check_ended(const char *how)
{
    for (int i = 0; i < NL; i++) {
        lease *l = &L[i];
        if (!l->alive) continue;
        if (!l->acq) violation("%s: lease %d got no on_acquire", how, i);
        if (l->release_called && !l->rel) violation("%s: lease %d got no on_release", how, i);
        if (l->acq_ok && !l->lost && !l->release_called)
            violation("%s: held lease %d got no on_lost", how, i);
        l->alive = 0;
        l->lk = NULL;
    }
    over = 1;
}

static void cb_close(redlease_client *c, void *arg)
{
    (void)c, (void)arg;
    /* from the loop once the close is done, or inside a free that cut it */
    if (!(ending == CLOSING || (ending == FREED && close_cut)) || over || close_cbs++)
        violation("close callback out of order");
    model_reached.closes++;
    check_ended("close");
}

/* Closes or frees the client; a free may cut a close short, and then the
 * close callback runs inside it, once (redlease.h). */
static void end_client(redlease_client *c, int graceful)
{
    if (graceful && ending == RUNNING) {
        ending = CLOSING;
        redlease_client_close(c, cb_close, NULL);
        return;
    }
    for (int i = 0; i < NL; i++)
        if (L[i].alive) {
            model_reached.frees_live++;
            break;
        }
    close_cut = ending == CLOSING;
    if (close_cut) model_reached.frees_closing++;
    ending = FREED;
    redlease_client_free(c);
    if (close_cut && close_cbs != 1) violation("free during close: close callback ran %d times", close_cbs);
    check_ended("free");
}

static void cb_acq(redlease_lock *lk, int st, void *arg);

static void cb_rel(redlease_lock *lk, int st, void *arg);

/* Inside free, a callback may still release its handle (on_release then
 * runs before free returns, as after a close: check_ended sees to it); a
 * new acquire is refused (redlease.h). */
static void call_from_freeing(lease *l)
{
    if (!l->release_called) {
        l->release_called = 1;
        int rc = redlease_release(l->lk, cb_rel, l);
        if (rc != REDLEASE_OK) violation("release inside free returned %d", rc);
    }
    int rc;
    redlease_lock *lk; /* were it accepted, cb_acq would find stray out of order */
    rc = redlease_acquire(redlease_lock_client(l->lk), "r0", NULL, cb_acq, NULL, &stray, &lk);
    if (rc != REDLEASE_ECANCELED) violation("acquire inside free returned %d", rc);
}

/* ------------------------------------------------------- the callbacks */

static uint64_t last_fence[2]; /* the last fence each resource's acquisitions reported */

/* Fences strictly increase over a resource's acquisitions, of either
 * kind (man 3 redlease, KINDS): each on_acquire(OK) is read from the
 * reply of one command that minted it, and one link reads its replies in
 * the order the commands ran. */
static void check_fence(lease *l)
{
    uint64_t f = redlease_lock_fence(l->lk);
    if (l->of) { /* a join reports its lease's fence: no acquisition of its own */
        if (f != l->of->fence)
            violation("lease %d joined lease %d and reports fence %llu, not its %llu", (int)(l - L),
                      (int)(l->of - L), (unsigned long long)f, (unsigned long long)l->of->fence);
        return;
    }
    l->fence = f;
    if (!l->fenced) {
        if (f) violation("lease %s was given fence %llu it did not ask for", l->token, (unsigned long long)f);
        return;
    }
    if (f <= last_fence[l->res])
        violation("%s acquired with fence %llu after fence %llu", l->key, (unsigned long long)f,
                  (unsigned long long)last_fence[l->res]);
    last_fence[l->res] = f;
    model_reached.fences_checked++;
}

static int acquire_explained(const lease *l, int st)
{
    switch (st) {
    case REDLEASE_OK:
    case REDLEASE_ETIMEDOUT:
    case REDLEASE_ECONN: return 1;
    case REDLEASE_EBUSY: return l->saw_busy;
    case REDLEASE_EREDIS: return l->saw_acquire_error;
    case REDLEASE_ECANCELED: return l->release_called || ending;
    case REDLEASE_EKIND: return l->saw_kind; /* never a wrong type: the other kind only */
    default: return 0;
    }
}

static void cb_acq(redlease_lock *lk, int st, void *arg)
{
    lease *l = arg;
    (void)lk;
    if (over) violation("on_acquire after the client ended");
    if (l->in_call && ending != FREED) violation("on_acquire inside the call");
    if (!l->alive || l->acq || l->rel) violation("on_acquire out of order");
    if (!acquire_explained(l, st)) violation("on_acquire(%d) unexplained", st);
    if (l->of && st != REDLEASE_OK && st != REDLEASE_ECANCELED) /* a join is an acquire that succeeded */
        violation("lease %d joined lease %d and its acquire ended %d", (int)(l - L), (int)(l->of - L), st);
    if (l->kind_ends && st != REDLEASE_EKIND && st != REDLEASE_ECANCELED)
        violation("lease %d: its live attempt was answered KIND, and its acquire ended %d", (int)(l - L), st);
    if (st == REDLEASE_EREDIS) model_reached.acquire_eredis++;
    if (st == REDLEASE_EKIND) model_reached.acquire_ekind++;
    if (st == REDLEASE_OK) check_fence(l);
    l->acq = 1;
    l->acq_ok = st == REDLEASE_OK;
    if (ending == FREED) call_from_freeing(l);
}

static void cb_lost(redlease_lock *lk, int reason, void *arg)
{
    lease *l = arg;
    (void)lk;
    if (over) violation("on_lost after the client ended");
    if (!l->acq_ok || l->lost || l->rel) violation("on_lost out of order");
    if (reason == REDLEASE_LOST_CLOSED ? !ending
                                       : reason == REDLEASE_LOST_NOT_OWNER && !lease_of(l)->saw_renew_zero)
        violation("on_lost(%d) unexplained", reason);
    if (reason >= 1 && reason <= 4) model_reached.lost[reason]++;
    if (reason >= 1 && reason <= 4 && l->of) model_reached.joined_lost[reason]++;
    l->lost = 1;
    if (ending == FREED) call_from_freeing(l);
}

static void cb_rel(redlease_lock *lk, int st, void *arg)
{
    lease *l = arg;
    (void)lk;
    if (over) violation("on_release after the client ended");
    if (l->in_call && ending != FREED) violation("on_release inside the call");
    if (l->rel || !l->acq) violation("on_release out of order");
    if (st == REDLEASE_EPROTO || (st == REDLEASE_ECANCELED && !ending))
        violation("on_release(%d) unexplained", st);
    /* a held lease's release said OK: a compare-and-delete of its own
     * deleted its key (not, say, a probe that found a queue) */
    if (st == REDLEASE_OK && l->acq_ok && !l->lost && !ending && !lease_of(l)->deleted && !l->others_held)
        violation("on_release(OK) with its key never deleted");
    /* re-entry: a release with another handle of its lease holding it
     * deletes nothing (note_deleted() checks that), the last one's does */
    if (st == REDLEASE_OK && l->acq_ok && !l->lost && !ending) {
        if (l->others_held)
            model_reached.joined_early[!l->of]++;
        else if (lease_of(l)->had_joiners)
            model_reached.joined_last[!l->of]++;
    }
    l->rel = 1;
    l->alive = 0;
}

/* Another handle of l's lease holds it (re-entry): its first handle, or
 * one joined to it, alive, not released, the lease not lost. */
static int others_hold(const lease *l)
{
    const lease *s = lease_of(l);
    if (s->lost_ev) return 0;
    for (int i = 0; i < NL; i++) {
        const lease *h = &L[i];
        if (h != l && h->alive && !h->release_called && (h->of == s || (h == s && s->had_joiners)))
            return 1;
    }
    return 0;
}

/* The key of l's lease was deleted (its compare-and-delete ran): with
 * re-entry, only once no handle of it holds it. */
void note_deleted(lease *l)
{
    l->deleted = 1;
    if (l->of || !l->had_joiners || l->lost_ev || ending != RUNNING) return; /* a joined handle's own token */
    for (int i = 0; i < NL; i++) {
        const lease *h = &L[i];
        if (h->alive && !h->release_called && (h->of == l || h == l))
            violation("%s deleted while lease %d still holds it (lease %s, t=%lld)", l->key, i, l->token,
                      (long long)F.now);
    }
}

static void release_one(lease *l)
{
    l->others_held = others_hold(l);
    l->release_called = 1; /* first: the event hook may run inside the call */
    l->in_call = 1;
    int rc = redlease_release(l->lk, cb_rel, l);
    l->in_call = 0;
    if (rc) violation("release returned %d", rc);
}

static int calm; /* a run with no fault steps (see step()) */
static int hook_acts;
static void hook(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)arg;
    lease *j = note_joins();
    lease *l = ev->token ? by_token(ev->token) : NULL;
    if (l && j && ev->type == REDLEASE_EV_ACQUIRED && j->of == l) {
        /* a join's: nothing sent, the lease's validity */
        if (ev->rtt_ms != -1 || F.now + ev->remaining_ms != l->deadline)
            violation("lease %d joined lease %d: rtt %lld, validity to %lld, the lease's to %lld", (int)(j - L),
                      (int)(l - L), (long long)ev->rtt_ms, (long long)(F.now + ev->remaining_ms),
                      (long long)l->deadline);
    } else if (l) {
        check_event(l, ev);
    }
    check_held();
    if (!hook_acts || draining || quieting || R(calm ? 64 : 8)) return;
    int a = R(NL + 1);
    if (a < NL) {
        if (L[a].alive && !L[a].release_called && L[a].lk) release_one(&L[a]);
    } else if (ending != FREED && !over && R(8) == 0) {
        end_client(c, ending == RUNNING ? R(2) : 0);
    }
}

/* The run's kind of each resource: a mutex, a semaphore (its limit), or
 * shared/exclusive (shared_res: its leases shared holders or mutexes, its
 * exclusive holders). */
static int sem_limit[2], shared_res[2];

static void start_one(lease *l)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    static const int modes[] = {REDLEASE_WAIT_DEFAULT, REDLEASE_WAIT_QUEUE, REDLEASE_WAIT_POLL,
                                REDLEASE_WAIT_WAKE};
    int res = calm && R(4) ? 0 : R(2); /* calm: contended */
    int limit = sem_limit[res], shared = shared_res[res] && R(2);
    if (R(16) == 0) { /* now and then another kind or limit: refused, or the resource changes kind */
        int k = R(3);
        shared = 0;
        if (!limit) /* a semaphore on a mutex's or a shared resource */
            limit = 1 + R(3);
        else if (k == 0)
            limit = limit % 3 + 1;
        else /* a mutex, or a shared holder, on a semaphore's */
            limit = 0, shared = k == 2;
    }
    /* re-entry: one handle in three asks for it; half of those take the
     * terms of a live handle that asked for it too, so that they may join
     * its lease (the same resource, kind, weight and fencing) */
    int reentrant = R(3) == 0;
    const lease *like = NULL;
    if (reentrant && R(2))
        for (int k = 0, i = R(NL); k < NL && !like; k++) {
            const lease *c = &L[(i + k) % NL];
            if (c->alive && c->reentrant) like = c;
        }
    if (like) res = like->res, limit = like->limit, shared = like->shared;
    /* a semaphore or a shared holder waits in its queue (by default or by
     * name) or polls; WAKE is theirs neither; an exclusive holder is a mutex */
    o.wait_mode = modes[R(limit || shared ? 3 : 4)];
    o.limit = limit;
    o.shared = shared;
    o.weight = like ? like->wopt : limit ? R(limit + 1) : 0; /* 0: 1 */
    o.reentrant = reentrant;
    o.ttl_ms = 100 + R(2000);
    int rr = R(4);
    o.renew_interval_ms = rr == 0 ? REDLEASE_RENEW_OFF : rr == 1 ? 0 : R((int)o.ttl_ms - 1) + 1;
    int w = R(3);
    o.wait_ms = w == 0 ? 0 : w == 1 ? REDLEASE_WAIT_FOREVER : R(3000);
    o.wait_retry_base_ms = 1 + R(50);
    o.wait_retry_max_ms = o.wait_retry_base_ms + R(300);
    o.max_hold_ms = R(4) ? 0 : R(5000);
    o.fencing = like ? like->fenced : R(2);
    o.wait_max_attempts = R(3) ? 0 : R(5);
    memset(l, 0, sizeof *l);
    /* The longest a waiting handle sleeps between attempts (lock.c does
     * not say it; docs/design.md, 11.4 and 4.2 do): in a queue a third
     * of its entry's life (max(ttl, 1 s)), else its backoff's cap; the
     * holder's TTL left only makes it shorter. */
    int64_t backoff_cap = o.wait_retry_max_ms > o.wait_retry_base_ms ? o.wait_retry_max_ms : o.wait_retry_base_ms;
    int64_t life = o.ttl_ms > 1000 ? o.ttl_ms : 1000;
    l->sleep_max = backoff_cap;
    if (o.wait_mode != REDLEASE_WAIT_POLL && life / 3 > backoff_cap) l->sleep_max = life / 3;
    l->alive = 1;
    l->in_call = 1;
    l->ttl = o.ttl_ms;
    l->deadline = -1;
    l->limit = limit;
    l->shared = shared;
    l->weight = shared ? 1 : !limit ? 0 : o.weight ? o.weight : 1;
    l->fenced = o.fencing;
    l->res = res;
    l->reentrant = reentrant;
    l->wopt = o.weight;
    l->beside = like && !like->acq_done ? like : NULL;
    char name[8];
    snprintf(name, sizeof name, "r%d", res);
    int rc = redlease_acquire(F.c, name, &o, cb_acq, cb_lost, l, &l->lk);
    l->in_call = 0;
    if (rc) {
        if (rc != REDLEASE_ECANCELED || !ending) violation("acquire returned %d", rc);
        l->alive = 0;
        l->lk = NULL;
        return;
    }
    if (ending) violation("acquire after the client's end returned 0");
    snprintf(l->token, sizeof l->token, "%s", redlease_lock_token(l->lk));
    snprintf(l->key, sizeof l->key, "%s", redlease_lock_key(l->lk));
}

/* ------------------------------------------------------------ the steps */

/* The client is gone once the loop adapter was detached. */
static void settle(void)
{
    if (F.c && F.detached) F.c = NULL;
}

/* Time passes to now + ms: the timer fires at each deadline on the way,
 * and held() is checked at every moment a key expires, a holder (a
 * semaphore's, a shared one) reaches its deadline or an exemption ends
 * (where it could first be wrong), before any timer due then. */
static void advance(int64_t ms)
{
    int64_t end = F.now + ms;
    fake_run(&F);
    while (F.now < end) {
        int64_t next = next_change(end);
        if (F.c && F.timer_at >= 0 && F.timer_at < next) next = F.timer_at;
        for (int i = 0; i < NL; i++)
            if (L[i].alive && L[i].exempt_until > F.now && L[i].exempt_until < next)
                next = L[i].exempt_until;
        if (next > F.now) F.now = next;
        check_held();
        fake_run(&F);
        settle();
        check_told_in_time();
    }
}

/* Forgets the commands every one of which is answered (the fake keeps
 * FAKE_MAX_CMDS, FAKE_SIDE_CMDS), so a long run never fills it. */
static void compact(void)
{
    pending_exec();
    if (F.head == F.ncmds && xh == F.ncmds) {
        for (int i = 0; i < F.ncmds; i++) fake_cmd_free(&F.cmds[i]);
        F.ncmds = F.head = xh = 0;
    }
    for (int i = 0; i < F.side.ncmds; i++)
        if (!F.side.cmds[i].answered) return;
    for (int i = 0; i < F.side.ncmds; i++) fake_cmd_free(&F.side.cmds[i]);
    F.side.ncmds = F.side.head = 0;
    sub_idx = -1;
}

/* The client's link, the subscriber's, the server's side of both: what
 * is pending happens now, until nothing is (the quiet phase, the drain). */
static void heal(void)
{
    for (int round = 0; round < 100 && F.c; round++) {
        int did = 0;
        if (!F.connected && F.connecting) {
            reconnect();
            did = 1;
        }
        settle();
        if (F.c && F.side.connecting) {
            link_connect();
            did = 1;
            settle();
        }
        if (sub_pending() >= 0) {
            srv_subscribe(0);
            did = 1;
        }
        waker_sync();
        if (F.c && nfifo) {
            read_pushes(nfifo, R(3));
            did = 1;
            settle();
        }
        while (fake_peek(&F)) {
            execute_and_deliver();
            did = 1;
        }
        fake_run(&F);
        settle();
        compact();
        if (!did) break;
    }
}

/* Steps that break something: in a calm run they are time passing
 * instead, so that waiters stay long enough in a subscribed queue. */
static int is_fault(int a)
{
    return (a >= 68 && a < 76) || (a >= 81 && a < 90) || (a >= 110 && a < 111) || (a >= 130 && a < 132) ||
           (a >= 136 && a < 137);
}

static void step(void)
{
    int a = R(140);
    if (calm && is_fault(a)) a = 52 + R(16); /* advance() */
    if (a < 12) {
        lease *l = &L[R(NL)];
        if (F.c && !l->alive && !l->acq) start_one(l);
    } else if (a < 20) {
        lease *l = &L[R(NL)];
        if (l->alive && !l->release_called) release_one(l);
    } else if (a < 32) { /* Redis runs commands; the replies wait in the socket */
        for (int k = 1 + R(4); k > 0; k--) execute();
    } else if (a < 44) { /* the library reads replies run earlier */
        for (int k = 1 + R(4); k > 0 && F.head < xh; k--) deliver();
        fake_run(&F);
    } else if (a < 52) { /* a quiet link: each runs and is read at once */
        for (int k = R(4); k > 0 && fake_peek(&F); k--) execute_and_deliver();
        fake_run(&F);
    } else if (a < 68) {
        advance(R(60));
    } else if (a < 72) { /* the process was paused: its timer may not have run yet */
        F.now += R(3000);
        if (R(2)) fake_run(&F);
    } else if (a < 76) {
        if (F.connected) fake_break(&F);
    } else if (a < 81) {
        if (!F.connected && F.connecting) reconnect();
    } else if (a < 83) {
        noscript_mode = !noscript_mode;
    } else if (a < 85) { /* another client takes a free key */
        char k[16];
        snprintf(k, sizeof k, "lock:{r%d}", R(2));
        if (!find(k, F.now)) put(k, "other", F.now + 500);
    } else if (a < 87) {
        wipe();
    } else if (a < 89) {
        next_error = 1 + R(N_ERRORS);
    } else if (a < 90) {
        if (F.c && ending != FREED && !over && R(4) == 0) end_client(F.c, ending == RUNNING ? R(2) : 0);
    } else if (a < 100) {
        advance(1);
    } else if (a < 110) { /* the subscriber's connect completes; maybe the server runs its
                           * SUBSCRIBE and the client reads the answer at once */
        link_connect();
        if (R(2)) {
            srv_subscribe(1);
            if (R(2)) read_pushes(1, R(3));
        }
    } else if (a < 111) {
        waker_sync();
        if (F.c && !F.detached && F.side.connecting) fake_side_connect_fail(&F);
    } else if (a < 118) { /* the server runs the SUBSCRIBE (an ACL may refuse it) */
        srv_subscribe(1);
    } else if (a < 130) { /* the client reads what its subscriber was pushed */
        read_pushes(1 + R(4), R(3));
        fake_run(&F);
    } else if (a < 132) {
        link_break();
    } else if (a < 133) {
        stranger_joins();
    } else if (a < 134) {
        forge_word();
    } else if (a < 135) {
        advance(1);
    } else if (a < 136) { /* the server's wall clock is stepped */
        step_server_clock(R(2001) - 1000);
    } else if (a < 137) {
        pub_refused = !pub_refused && R(2);
    } else {
        stranger_takes();
    }
    settle();
    if (calm && F.c) { /* the subscriber comes up at once; words still wait to be read */
        link_connect();
        settle();
        srv_subscribe(0);
        if (nfifo && fifo[0].kind == PUSH_CONFIRM) read_pushes(1, R(3));
        settle();
    }
    compact();
}

/* The quiet phase (see the top): a free lock, while the link is up and a
 * mutex's handle waits for it, is taken within the longest sleep of its
 * waiters, plus the phase's granularity. A shared or a semaphore's head
 * that a reminder cut to a claim is served as a lock handed to an
 * exclusive one is: a free key waits for it until that claim ends. */
#define QUIET_MS 1500
#define QUIET_TICK 10
static int64_t free_since[2];
static int64_t open_since[NL];

static void check_served(void)
{
    for (int r = 0; r < 2; r++) {
        char k[16];
        snprintf(k, sizeof k, "lock:{r%d}", r);
        int64_t bound = -1;
        int who = -1;
        for (int i = 0; i < NL; i++) {
            const lease *l = &L[i];
            if (l->alive && l->lk && !in_holders(l) && !l->acq_done && !l->release_called && l->res == r &&
                l->sleep_max > bound)
                bound = l->sleep_max, who = i;
        }
        const qentry *h = live_head(r);
        if (who < 0 || !F.connected || find(k, F.now) || (h && marked_entry(h) && h->reminded)) {
            if (free_since[r] >= 0 && who >= 0) model_reached.quiet_served++;
            free_since[r] = -1;
            continue;
        }
        if (free_since[r] < 0) free_since[r] = F.now;
        if (F.now - free_since[r] > bound + QUIET_TICK + 2) {
            violation("%s free since t=%lld while lease %d waits for it (t=%lld, it sleeps %lld ms at most)",
                      k, (long long)free_since[r], who, (long long)F.now, (long long)bound);
            free_since[r] = -1;
        }
    }
}

/* The quiet phase: a shared holder that waits while the way in is open to
 * it (the link up, the lock key free or shared, no live waiter ahead of it
 * in the queue: it is the live head, or nobody is) enters within its
 * longest sleep, plus the phase's granularity. */
static void check_entered(void)
{
    for (int i = 0; i < NL; i++) {
        const lease *l = &L[i];
        int open = 0;
        if (F.connected && l->alive && l->lk && l->shared && !l->acq_done && !l->release_called) {
            kv *e = find(l->key, F.now);
            const qentry *h = live_head(l->res);
            open = (!e || strcmp(e->val, "shared") == 0) && (!h || strcmp(h->tok, l->token) == 0);
        }
        if (!open) {
            if (open_since[i] >= 0 && l->acq_ok) model_reached.quiet_entered++;
            open_since[i] = -1;
            continue;
        }
        if (open_since[i] < 0) open_since[i] = F.now;
        if (F.now - open_since[i] > l->sleep_max + QUIET_TICK + 2) {
            violation("shared lease %d may enter %s since t=%lld and has not (t=%lld, it sleeps %lld ms at most)", i,
                      l->key, (long long)open_since[i], (long long)F.now, (long long)l->sleep_max);
            open_since[i] = -1;
        }
    }
}

/* The quiet phase, after everything pending happened: a waiting lease
 * that read a "g" the queue published has taken the lock handed to it:
 * the key no longer holds its token as handed (its own attempt set it, or
 * its claim ended while the link was down). A forged "g", or a key its
 * own attempt set (an OK read too late), it learns at its next attempt. */
static void check_granted(void)
{
    for (int i = 0; i < NL && F.connected; i++) {
        const lease *l = &L[i];
        if (!told_g[i]) continue;
        told_g[i] = 0;
        if (!l->alive || l->acq_done || l->release_called) continue;
        kv *e = find(l->key, F.now);
        if (e && e->handed && owns_val(e->val, l->token))
            violation("lease %d read that %s was handed to it and has not taken it (t=%lld)", i, l->key,
                      (long long)F.now);
    }
}

static void quiet(void)
{
    quieting = 1;
    noscript_mode = next_error = pub_refused = 0;
    free_since[0] = free_since[1] = -1;
    for (int i = 0; i < NL; i++) open_since[i] = -1;
    memset(told_g, 0, sizeof told_g);
    int64_t end = F.now + QUIET_MS;
    while (F.c && F.now < end) {
        heal();
        if (!F.c) break;
        check_granted();
        check_served();
        check_entered();
        if (R(20) == 0) { /* a holder lets go: waiters are served through the queue */
            lease *l = &L[R(NL)];
            if (l->alive && l->lk && l->acq_ok && !l->lost_ev && !l->release_called) release_one(l);
            heal();
            if (!F.c) break;
            check_granted();
            check_served();
            check_entered();
        }
        int64_t dt = QUIET_TICK;
        if (F.timer_at > F.now && F.timer_at - F.now < dt) dt = F.timer_at - F.now;
        advance(dt);
        settle();
        check_held();
    }
    quieting = 0;
}

/* An acquire that ended without a lease, or by joining another handle's
 * (re-entry: the token its own attempts sent is none of the lease's),
 * deleted whatever its attempts set and left the queue (its drop, behind
 * them on the wire): once all it sent
 * has run, no key holds its token, no queue a live entry of it and no
 * set of holders (a semaphore's, shared ones) a holder, unless Redis
 * refused that delete, or the holders' release ran with the kind key lost
 * (it answers 0 before it looks); or the queue handed the key to it, kept
 * its entry, or a set its holder, while its drop never ran and could have
 * been lost: the link was down when the acquire ended or broke since (the
 * library gives a drop up after the lease's TTL, and an entry can live
 * longer, max(ttl, 1 s): its hand-over then costs the queue one claim,
 * docs/design.md, 11.4; a holder too, by our clock, when the server's was
 * stepped back). */
static void check_no_orphan_keys(void)
{
    for (int i = 0; i < NL; i++) {
        const lease *l = &L[i];
        if ((!l->of && (!l->acq || l->acq_ok)) || l->delete_failed || !l->token[0]) continue;
        int excused = l->failed_ev && !l->drop_ran && (!l->fail_up || links != l->fail_links);
        const char *how = l->of ? "joined a lease" : "failed";
        for (int k = 0; k < 16; k++)
            if (db[k].used && db[k].exp > F.now && strcmp(db[k].val, l->token) == 0 &&
                !(db[k].handed && excused)) {
                violation("lease %d: its acquire %s and left %s holding its token", i, how, db[k].key);
                return;
            }
        for (int r = 0; r < 2; r++)
            if (live_entry(&Q[r], l->token) && !excused) {
                violation("lease %d: its acquire %s and left a live entry in lock:{r%d}:queue", i, how, r);
                return;
            }
        if (in_holders(l) && !l->release_kindless && !excused && sem_holder_live(l->res, l->token)) {
            violation("lease %d: its acquire %s and left it a holder of %s", i, how, l->key);
            return;
        }
    }
}

static void reset(void)
{
    bad = 0;
    memset(db, 0, sizeof db);
    memset(L, 0, sizeof L);
    memset(Q, 0, sizeof Q);
    qexpire(&Q[0]);
    qexpire(&Q[1]);
    memset(S, 0, sizeof S);
    memset(last_fence, 0, sizeof last_fence);
    srv_skew = 0;
    strangers = 0;
    nfifo = sub_on = sub_link = pub_refused = 0;
    sub_idx = -1;
    noscript_mode = 0;
    native = native_refused = 0;
    next_error = 0;
    fence_ctr = 100;
    xh = 0;
    links = 1; /* fake_start connects */
    ending = RUNNING;
    over = close_cbs = draining = quieting = close_cut = 0;
}

int model_run(const model_driver *d)
{
    drv = d;
    reset();
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 50 + R(300);
    command_timeout = co.command_timeout_ms;
    fast_server = R(2);
    fake_start(&F, &co);
    redlease_client_set_rng(F.c, rng_fn, NULL);
    hook_acts = R(2);
    calm = R(4) == 0;
    for (int r = 0; r < 2; r++) {
        int k = R(4);
        sem_limit[r] = k == 0 ? 1 + R(3) : 0;
        shared_res[r] = k == 1;
    }
    redlease_client_set_event_cb(F.c, hook, NULL);
    for (int st = 0; st < d->max_steps && F.c && (!d->more || d->more(d->ctx)); st++) {
        step();
        check_held();
    }
    if (F.c && ending == RUNNING) quiet();
    /* Drain: release everything and let the client settle (or finish
     * closing). */
    draining = 1;
    for (int i = 0; i < NL; i++)
        if (L[i].alive && !L[i].release_called) release_one(&L[i]);
    noscript_mode = 0;
    next_error = 0;
    for (int k = 0; k < 200 && F.c; k++) {
        heal();
        if (F.c && F.connected) check_no_orphan_keys();
        advance(50);
        check_held();
    }
    if (ending == CLOSING && close_cbs != 1) violation("close callback ran %d times", close_cbs);
    for (int i = 0; i < NL; i++)
        if (L[i].release_called && !L[i].rel) violation("no on_release for lease %d", i);
    if (F.c) {
        redlease_stats s;
        redlease_client_stats(F.c, &s);
        if (s.locks_now) violation("%llu handles left at the end", (unsigned long long)s.locks_now);
        ending = FREED;
    }
    fake_free(&F);
    waker_sync();
    if (fake_alloc_live()) violation("%ld allocations left", fake_alloc_live());
    return bad;
}
