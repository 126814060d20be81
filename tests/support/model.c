/* SPDX-License-Identifier: MIT */
/* The model check of the core. One program drives up to six leases on two
 * resources through steps that the driver chooses (model.h): acquires with
 * chosen options, releases (also from inside the event hook), the model's
 * Redis executing the oldest command sent and, separately, the oldest
 * executed reply being delivered (time may pass between send, execution
 * and delivery), time passing, process pauses (the clock jumps and the
 * timer may not have run yet when the next reply is read), broken
 * connections and reconnects, NOSCRIPT phases, error replies (OOM,
 * LOADING, BUSY, READONLY, NOSCRIPT), a competitor writing the keys, keys
 * lost (a restart without persistence, an eviction), and the client ended
 * by redlease_client_close() or redlease_client_free() with live handles
 * (also from inside the event hook).
 *
 * The model's Redis fixes a command's effect and reply when it executes
 * it; a key set or renewed with PX p at time e expires at e + p, or, when
 * the run's server clock runs fast, at e + p - (p/100 + 2): the most
 * drift the contract allows (man 3 redlease, TIMING: local validity is
 * t0 + ttl - drift).
 *
 * Checked, after every step, inside every event, and at every moment a key
 * expires or an exemption ends while time passes:
 *   - held() implies the key holds our token now; except, after the key
 *     was wiped, until the local deadline that commands executed before
 *     the wipe could give (a single Redis cannot do better), only on
 *     the link those were confirmed on, and not once a renewal was
 *     answered 0 (the library has been told);
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
 *     ECANCELED after a release or the client's end); on_lost at most once
 *     and only after on_acquire(OK); on_release once and last; none of them
 *     inside the call that started it, nor after the client ended;
 *   - close and free: every live handle got on_acquire, every release
 *     its on_release, every held lease on_lost; the close callback runs
 *     once, also when a free cuts the close short (then inside the free);
 *     inside free a callback's acquire returns ECANCELED and its release
 *     OK, with on_release before free returns;
 * while the client settles at the end, each time all it sent has run: no
 * key holds the token of a lease whose acquire failed (unless Redis
 * refused that delete); and at the end (after releasing everything):
 * every release answered, no handle left, no allocation left. */
#include "model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "scripts.h"

model_reach model_reached;

static const model_driver *drv;
static int R(int n) { return (int)drv->choose(drv->ctx, (uint32_t)n); }
static uint32_t rng_fn(void *arg)
{
    (void)arg;
    return drv->bits(drv->ctx);
}

static fake F;
static int bad;

/* Counts a violated invariant and tells the driver what it was. */
static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
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
static int64_t contract_drift(int64_t ttl) { return ttl / 100 + 2; }
static int64_t contract_until(int64_t t0, int64_t ttl) { return t0 + ttl - contract_drift(ttl); }

/* ---------------------------------------------------------- the leases */

#define NL 6
typedef struct lease {
    redlease_lock *lk;
    int alive, acq, acq_ok, lost, rel, release_called, in_call;
    int saw_busy, saw_acquire_error, saw_renew_zero; /* replies delivered to it */
    int delete_failed;    /* a compare-and-delete of its token was answered an error */
    int64_t ttl;
    int64_t deadline;     /* the local deadline its events reported, or -1 */
    int64_t exec_until;   /* what its confirmations executed so far could give */
    int64_t exempt_until; /* its key was wiped: held() without it is excused until then, */
    int exempt_link;      /* on the link it was confirmed on (redlease.h: held() is 0 after a
                           * reconnect until a renewal confirms it again) */
    char token[40], key[64];
} lease;
static lease L[NL];

static lease *by_token(const char *token)
{
    for (int i = 0; i < NL; i++)
        if (L[i].alive && strcmp(L[i].token, token) == 0) return &L[i];
    return NULL;
}

/* ------------------------------------------------------ the Redis model */

typedef struct kv {
    char key[64], val[64];
    int64_t exp;
    int used;
} kv;
static kv db[16];
static long long fence_ctr;
static int noscript_mode; /* EVALSHA answers NOSCRIPT */
static int fast_server;   /* the server's clock runs fast: keys expire early */
static int links;         /* connections made so far */
static int native;        /* RDL_NATIVE_* the server of this link says it has */
static int native_refused; /* ...and then answers them "unknown command" (a proxy
                              in between, a failover to an older server) */

static kv *find(const char *k, int64_t now)
{
    for (int i = 0; i < 16; i++)
        if (db[i].used && strcmp(db[i].key, k) == 0) {
            if (db[i].exp <= now) {
                db[i].used = 0;
                return NULL;
            }
            return &db[i];
        }
    return NULL;
}

static void put(const char *k, const char *v, int64_t exp)
{
    for (int i = 0; i < 16; i++)
        if (!db[i].used) {
            db[i].used = 1;
            snprintf(db[i].key, sizeof db[i].key, "%s", k);
            snprintf(db[i].val, sizeof db[i].val, "%s", v);
            db[i].exp = exp;
            return;
        }
    abort(); /* the model is sized for two resources */
}

/* When a key given PX px now expires, by our clock. */
static int64_t expiry(const char *px)
{
    int64_t p = atoll(px);
    return F.now + p - (fast_server ? contract_drift(p) : 0);
}

/* A confirmation of token's lease, sent at sent_at, was executed. */
static void confirmed(const char *token, int64_t sent_at)
{
    lease *l = by_token(token);
    if (!l) return;
    int64_t until = contract_until(sent_at, l->ttl);
    if (until > l->exec_until) l->exec_until = until;
}

/* Replies fixed at execution, delivered later. Commands F.head..xh-1 of
 * the fake's queue are executed and not delivered; xh.. are not executed. */
enum { REP_OK, REP_NIL, REP_INT, REP_ERR };
typedef struct reply {
    int type;
    long long v;
    const char *err;
} reply;
static reply rep[FAKE_MAX_CMDS];
static int xh;

static const char *const errors[] = {
    "OOM command not allowed when used memory > 'maxmemory'.",
    "LOADING Redis is loading the dataset in memory",
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    "READONLY You can't write against a read only replica.",
    "NOSCRIPT No matching script. Please use EVAL.", /* last: only for EVALSHA */
};
#define N_ERRORS ((int)(sizeof errors / sizeof errors[0]))
static int next_error; /* 1 + index in errors: the next command executed fails so */

/* Which script a command runs (-1 for SET and anything else). */
static int script_of(const fake_cmd *c)
{
    int sha = strcmp(c->argv[0], "EVALSHA") == 0;
    if (!sha && strcmp(c->argv[0], "EVAL") != 0) return -1;
    for (int i = 0; i < RDL_SCRIPT_COUNT; i++)
        if (strcmp(c->argv[1], sha ? fake_sha(i) : rdl_script_src[i]) == 0) return i;
    abort(); /* the library only runs its own scripts */
}

static const char *token_of(const fake_cmd *c, int s)
{
    return s < 0 ? c->argv[2] : c->argv[s == RDL_SCRIPT_ACQUIRE_FENCED ? 5 : 4];
}

static int pending_exec(void)
{
    if (xh < F.head) xh = F.head; /* a broken link answered them all */
    return xh < F.ncmds;
}

/* A command as Redis runs it: the script it is, or the conditional
 * command (DELIFEQ, SET IFEQ) doing that script's work, and its key,
 * token and TTL. */
typedef struct view {
    int s;            /* RDL_SCRIPT_* or -1 (SET NX PX) */
    int native;
    const char *key, *token, *px;
} view;

static int arg_is(const fake_cmd *c, int i, const char *s)
{
    return i < c->argc && strcmp(c->argv[i], s) == 0;
}

static view view_of(const fake_cmd *c)
{
    if (arg_is(c, 0, "DELIFEQ") && c->argc == 3)
        return (view){RDL_SCRIPT_RELEASE, 1, c->argv[1], c->argv[2], NULL};
    if (arg_is(c, 0, "DELEX") && c->argc == 4 && arg_is(c, 2, "IFEQ"))
        return (view){RDL_SCRIPT_RELEASE, 1, c->argv[1], c->argv[3], NULL};
    if (arg_is(c, 0, "SET") && c->argc == 7 && arg_is(c, 3, "IFEQ") && arg_is(c, 5, "PX")) {
        /* compared with IFEQ's operand; the library never changes the value */
        if (strcmp(c->argv[2], c->argv[4]) != 0) abort();
        return (view){RDL_SCRIPT_RENEW, 1, c->argv[1], c->argv[4], c->argv[6]};
    }
    int s = script_of(c);
    if (s < 0) {
        if (!(arg_is(c, 0, "SET") && c->argc == 6 && arg_is(c, 3, "NX") && arg_is(c, 4, "PX")))
            abort(); /* nothing else is sent after the handshake */
        return (view){-1, 0, c->argv[1], c->argv[2], c->argv[5]};
    }
    return (view){s, 0, c->argv[3], token_of(c, s),
                  s == RDL_SCRIPT_RELEASE ? NULL : c->argv[s == RDL_SCRIPT_ACQUIRE_FENCED ? 6 : 5]};
}

/* Redis runs the oldest command not run yet, now. */
static void execute(void)
{
    if (!pending_exec()) return;
    const fake_cmd *c = &F.cmds[xh];
    reply *r = &rep[xh++];
    int sha = strcmp(c->argv[0], "EVALSHA") == 0;
    if (next_error) {
        int e = next_error - 1;
        next_error = 0;
        if (e == N_ERRORS - 1 && !sha) e = 0;
        *r = (reply){REP_ERR, 0, errors[e]};
        view v = view_of(c);
        if (v.s == RDL_SCRIPT_RELEASE) /* a delete refused: the key may stay to its TTL */
            for (int i = 0; i < NL; i++)
                if (strcmp(L[i].token, v.token) == 0) L[i].delete_failed = 1;
        model_reached.error_replies++;
        return;
    }
    view v = view_of(c);
    if (v.native && native_refused) { /* not run: the library sends the script */
        *r = (reply){REP_ERR, 0, "ERR unknown command 'DELIFEQ', with args beginning with: "};
        model_reached.native_refused++;
        return;
    }
    if (v.native) model_reached.native_commands++;
    if (v.s < 0) {
        if (find(c->argv[1], F.now)) {
            *r = (reply){REP_NIL, 0, NULL};
        } else {
            put(c->argv[1], c->argv[2], expiry(c->argv[5]));
            confirmed(c->argv[2], c->sent_at);
            *r = (reply){REP_OK, 0, NULL};
        }
        return;
    }
    if (sha && noscript_mode) {
        *r = (reply){REP_ERR, 0, errors[N_ERRORS - 1]};
        return;
    }
    int s = v.s;
    const char *token = v.token;
    kv *e = find(v.key, F.now);
    int ours = e && strcmp(e->val, token) == 0;
    if (s == RDL_SCRIPT_RENEW) {
        if (ours) {
            e->exp = expiry(v.px);
            confirmed(token, c->sent_at);
        }
        if (v.native)
            *r = (reply){ours ? REP_OK : REP_NIL, 0, NULL}; /* SET IFEQ */
        else
            *r = (reply){REP_INT, ours, NULL};
    } else if (s == RDL_SCRIPT_RELEASE) {
        if (ours) e->used = 0;
        *r = (reply){REP_INT, ours, NULL};
    } else if (e && !ours) { /* an acquire script, held by another */
        *r = (reply){REP_INT, 0, NULL};
    } else { /* an acquire script: the key was free, or ours from an earlier attempt */
        const char *px = v.px;
        if (ours)
            e->exp = expiry(px);
        else
            put(v.key, token, expiry(px));
        confirmed(token, c->sent_at);
        *r = (reply){REP_INT, s == RDL_SCRIPT_ACQUIRE_FENCED ? ++fence_ctr : 1, NULL};
    }
}

/* Notes what a reply tells its lease, before the library reads it. */
static void note_delivery(const fake_cmd *c, const reply *r)
{
    view v = view_of(c);
    int s = v.s;
    lease *l = by_token(v.token);
    if (!l) return;
    int ok = r->type == REP_OK || (r->type == REP_INT && r->v > 0);
    if (s < 0 || s == RDL_SCRIPT_ACQUIRE || s == RDL_SCRIPT_ACQUIRE_FENCED) {
        if (r->type == REP_ERR) l->saw_acquire_error = 1;
        if (r->type == REP_NIL || (r->type == REP_INT && r->v == 0)) l->saw_busy = 1;
        if (ok && F.now >= contract_until(c->sent_at, l->ttl)) model_reached.late_acquire_ok++;
    } else if (s == RDL_SCRIPT_RENEW) {
        if ((r->type == REP_INT && r->v == 0) || r->type == REP_NIL) {
            l->saw_renew_zero = 1;
            l->exempt_until = 0; /* told the key is not ours: no excuse left */
        }
        if (ok && l->deadline >= 0 && F.now >= l->deadline) model_reached.late_renewal++;
    }
}

/* The library reads the oldest executed reply. */
static void deliver(void)
{
    const fake_cmd *c = fake_peek(&F);
    if (!c || F.head >= xh) return;
    const reply *r = &rep[F.head];
    note_delivery(c, r);
    switch (r->type) {
    case REP_OK: fake_reply_status(&F, "OK"); break;
    case REP_NIL: fake_reply_nil(&F); break;
    case REP_INT: fake_reply_int(&F, r->v); break;
    default: fake_reply_err(&F, r->err); break;
    }
}

/* The oldest command sent is answered at once (run first if need be). */
static void execute_and_deliver(void)
{
    pending_exec();
    if (F.head == xh) execute();
    deliver();
}

/* The connect completes and Redis answers the handshake (PING) at once;
 * what the event hook sends meanwhile waits its turn. */
static void reconnect(void)
{
    fake_connect_raw(&F);
    links++;
    fake_cmd *c;
    /* Each link may reach another server: one with DELIFEQ and SET IFEQ
     * or not, one that says so and then refuses them. */
    native = (int[]){0, RDL_NATIVE_DELIFEQ, RDL_NATIVE_DELEX}[R(3)];
    native_refused = native && R(4) == 0;
    while ((c = fake_peek(&F)) && (strcmp(c->argv[0], "PING") == 0 || strcmp(c->argv[0], "COMMAND") == 0)) {
        if (strcmp(c->argv[0], "PING") == 0)
            fake_reply_status(&F, "PONG");
        else
            fake_reply_probe(&F, native);
    }
    fake_run(&F);
}

/* Keys lost: a restart without persistence (all keys, the script cache)
 * or the eviction of one lock key. A lease whose key goes may still be
 * held until what its confirmations executed before could give. */
static void wipe(void)
{
    int which = R(3); /* 0: restart, 1/2: lock:{r0}/lock:{r1} evicted */
    char k[24];
    snprintf(k, sizeof k, "lock:{r%d}", which - 1);
    for (int i = 0; i < 16; i++)
        if (db[i].used && (which == 0 || strcmp(db[i].key, k) == 0)) db[i].used = 0;
    for (int i = 0; i < NL; i++)
        if (L[i].alive && (which == 0 || strcmp(L[i].key, k) == 0) &&
            L[i].exec_until > L[i].exempt_until) {
            L[i].exempt_until = L[i].exec_until;
            L[i].exempt_link = links;
        }
    model_reached.wipes++;
    if (which == 0) {
        noscript_mode = 1;
        if (F.connected && R(2)) fake_break(&F); /* the restart also cut the link */
    }
}

/* ------------------------------------------------------------ the checks */

static void check_held(void)
{
    for (int i = 0; F.c && i < NL; i++) {
        lease *l = &L[i];
        if (!l->alive || !l->lk || !redlease_lock_held(l->lk)) continue;
        if (!F.connected)
            violation("%s held with the link down (t=%lld)", l->key, (long long)F.now);
        if (l->deadline < 0 || F.now >= l->deadline)
            violation("%s held at t=%lld, its deadline %lld", l->key, (long long)F.now,
                      (long long)l->deadline);
        kv *e = find(l->key, F.now);
        if (e && strcmp(e->val, l->token) == 0) continue;
        if (F.now < l->exempt_until && l->exempt_link == links)
            model_reached.held_on_wiped++;
        else
            violation("held but %s is not ours (t=%lld)", l->key, (long long)F.now);
    }
}

/* The timer has run at this moment: a held lease past its deadline must
 * have heard on_lost by now (unless its release was asked for). */
static void check_told_in_time(void)
{
    for (int i = 0; F.c && i < NL; i++) {
        const lease *l = &L[i];
        if (l->alive && l->acq_ok && !l->lost && !l->release_called && l->deadline >= 0 &&
            F.now >= l->deadline)
            violation("%s past its deadline %lld at t=%lld without on_lost", l->key,
                      (long long)l->deadline, (long long)F.now);
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
        break;
    case REDLEASE_EV_RENEWED:
        if (l->deadline < 0 || F.now >= l->deadline)
            violation("renewal of %s confirmed at t=%lld, after its deadline %lld", l->key, now,
                      (long long)l->deadline);
        l->deadline = F.now + ev->remaining_ms;
        break;
    case REDLEASE_EV_LOST:
        if (ev->status == REDLEASE_LOST_EXPIRED && (l->deadline < 0 || F.now < l->deadline))
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

enum { RUNNING, CLOSING, FREED };
static int ending; /* RUNNING, or how the client was ended */
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

static int acquire_explained(const lease *l, int st)
{
    switch (st) {
    case REDLEASE_OK:
    case REDLEASE_ETIMEDOUT:
    case REDLEASE_ECONN: return 1;
    case REDLEASE_EBUSY: return l->saw_busy;
    case REDLEASE_EREDIS: return l->saw_acquire_error;
    case REDLEASE_ECANCELED: return l->release_called || ending;
    default: return 0; /* the model's Redis never answers a wrong type */
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
    if (st == REDLEASE_EREDIS) model_reached.acquire_eredis++;
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
                                       : reason == REDLEASE_LOST_NOT_OWNER && !l->saw_renew_zero)
        violation("on_lost(%d) unexplained", reason);
    if (reason >= 1 && reason <= 4) model_reached.lost[reason]++;
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
    l->rel = 1;
    l->alive = 0;
}

static void release_one(lease *l)
{
    l->release_called = 1; /* first: the event hook may run inside the call */
    l->in_call = 1;
    int rc = redlease_release(l->lk, cb_rel, l);
    l->in_call = 0;
    if (rc) violation("release returned %d", rc);
}

static int hook_acts;
static void hook(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)arg;
    lease *l = ev->token ? by_token(ev->token) : NULL;
    if (l) check_event(l, ev);
    check_held();
    if (!hook_acts || draining || R(8)) return;
    int a = R(NL + 1);
    if (a < NL) {
        if (L[a].alive && !L[a].release_called && L[a].lk) release_one(&L[a]);
    } else if (ending != FREED && !over && R(8) == 0) {
        end_client(c, ending == RUNNING ? R(2) : 0);
    }
}

static void start_one(lease *l)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.wait_mode = REDLEASE_WAIT_POLL; /* the model's Redis has no queue yet */
    o.ttl_ms = 100 + R(2000);
    int rr = R(4);
    o.renew_interval_ms = rr == 0 ? REDLEASE_RENEW_OFF : rr == 1 ? 0 : R((int)o.ttl_ms - 1) + 1;
    int w = R(3);
    o.wait_ms = w == 0 ? 0 : w == 1 ? REDLEASE_WAIT_FOREVER : R(3000);
    o.retry_base_ms = 1 + R(50);
    o.retry_max_ms = o.retry_base_ms + R(300);
    o.max_hold_ms = R(4) ? 0 : R(5000);
    o.fencing = R(2);
    o.max_attempts = R(3) ? 0 : R(5);
    memset(l, 0, sizeof *l);
    l->alive = 1;
    l->in_call = 1;
    l->ttl = o.ttl_ms;
    l->deadline = -1;
    char res[8];
    snprintf(res, sizeof res, "r%d", R(2));
    int rc = redlease_acquire(F.c, res, &o, cb_acq, cb_lost, l, &l->lk);
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
 * and held() is checked at every moment a key expires or an exemption
 * ends (where it could first be wrong), before any timer due then. */
static void advance(int64_t ms)
{
    int64_t end = F.now + ms;
    fake_run(&F);
    while (F.now < end) {
        int64_t next = end;
        if (F.c && F.timer_at >= 0 && F.timer_at < next) next = F.timer_at;
        for (int i = 0; i < 16; i++)
            if (db[i].used && db[i].exp > F.now && db[i].exp < next) next = db[i].exp;
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

static void step(void)
{
    int a = R(100);
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
        if (F.c && ending != FREED && !over && R(5) == 0) end_client(F.c, ending == RUNNING ? R(2) : 0);
    } else {
        advance(1);
    }
    settle();
}

/* An acquire that ended without a lease deleted whatever its attempts set
 * (behind them on the wire): once all it sent has run, no key holds its
 * token, unless Redis refused that delete. */
static void check_no_orphan_keys(void)
{
    for (int i = 0; i < NL; i++) {
        const lease *l = &L[i];
        if (!l->acq || l->acq_ok || l->delete_failed || !l->token[0]) continue;
        for (int k = 0; k < 16; k++)
            if (db[k].used && db[k].exp > F.now && strcmp(db[k].val, l->token) == 0) {
                violation("lease %d: its acquire failed and left %s holding its token", i, db[k].key);
                return;
            }
    }
}

static void reset(void)
{
    bad = 0;
    memset(db, 0, sizeof db);
    memset(L, 0, sizeof L);
    noscript_mode = 0;
    native = native_refused = 0;
    next_error = 0;
    fence_ctr = 100;
    xh = 0;
    links = 1; /* fake_start connects */
    ending = RUNNING;
    over = close_cbs = draining = close_cut = 0;
}

int model_run(const model_driver *d)
{
    drv = d;
    reset();
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 50 + R(300);
    fast_server = R(2);
    fake_start(&F, &co);
    redlease_client_set_rng(F.c, rng_fn, NULL);
    hook_acts = R(2);
    redlease_client_set_event_cb(F.c, hook, NULL);
    for (int st = 0; st < d->max_steps && F.c && (!d->more || d->more(d->ctx)); st++) {
        step();
        check_held();
    }
    /* Drain: release everything and let the client settle (or finish
     * closing). */
    draining = 1;
    for (int i = 0; i < NL; i++)
        if (L[i].alive && !L[i].release_called) release_one(&L[i]);
    noscript_mode = 0;
    next_error = 0;
    for (int k = 0; k < 200 && F.c; k++) {
        if (!F.connected && F.connecting) reconnect();
        while (fake_peek(&F)) execute_and_deliver();
        fake_run(&F);
        while (fake_peek(&F)) execute_and_deliver(); /* what the timer sent */
        if (F.connected) check_no_orphan_keys();
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
    if (fake_alloc_live()) violation("%ld allocations left", fake_alloc_live());
    return bad;
}
