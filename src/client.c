/* SPDX-License-Identifier: MIT */
/* The client: one connection, one loop timer, and the lifetime rules.
 *
 * Every deadline (connect, handshake, reconnect, and each lock's next
 * action) sits in one min-heap; the loop sees a single one-shot timer armed
 * for the earliest. redlease_client_on_timer() is the only place that runs
 * lock callbacks, so a user callback never runs inside hiredis.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "client.h"
#include "lock.h"
#include "errors.h"

static int64_t monotonic_ms(void *arg)
{
    (void)arg;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rdl_now(const redlease_client *c) { return c->clock(c->clock_arg); }

int rdl_client_ready(const redlease_client *c) { return c->conn == RDL_CONN_READY && !c->dead; }

void rdl_set_errstr(redlease_client *c, const char *s, size_t n)
{
    if (!s) s = "", n = 0;
    if (n >= sizeof c->errstr) n = sizeof c->errstr - 1;
    memcpy(c->errstr, s, n);
    c->errstr[n] = '\0';
}

void rdl_emit(redlease_client *c, const redlease_event *ev)
{
    if (c->event_cb && !c->dead) c->event_cb(c, ev, c->event_arg);
}

/* Connection events; every one but EV_CONNECTED is about the failure
 * whose text c->errstr holds. */
static void emit_conn(redlease_client *c, int type, int status, int64_t retry_in)
{
    const char *detail = type != REDLEASE_EV_CONNECTED && c->errstr[0] ? c->errstr : NULL;
    redlease_event ev = {.type = type, .status = status, .rtt_ms = -1, .remaining_ms = -1,
                         .retry_in_ms = retry_in, .detail = detail};
    rdl_emit(c, &ev);
}

int rdl_client_conn_status(const redlease_client *c)
{
    return c->conn_definite ? c->conn_error : REDLEASE_ECONN;
}

/* ------------------------------------------------------------- creation */

int redlease_client_new(redlease_client **out, const redlease_client_options *o)
{
    redlease_client_options defaults;
    if (!out) return REDLEASE_EINVAL;
    *out = NULL;
    if (!o) {
        redlease_client_options_init(&defaults);
        o = &defaults;
    }
    int rc = rdl_client_options_check(o);
    if (rc) return rc;

    redlease_client *c = rdl_calloc(1, sizeof *c);
    if (!c) return REDLEASE_ENOMEM;
    rdl_heap_init(&c->heap);
    rdl_list_init(&c->locks);
    rdl_list_init(&c->waiting);
    rdl_list_init(&c->notify);
    int ok = 1;
    c->host = rdl_strdup(o->unix_path ? NULL : o->host, &ok);
    c->unix_path = rdl_strdup(o->unix_path, &ok);
    c->username = rdl_strdup(o->username, &ok);
    c->password = rdl_strdup(o->password, &ok);
    c->prefix = rdl_strdup(o->key_prefix ? o->key_prefix : "", &ok);
    if (!ok) {
        redlease_client_free(c);
        return REDLEASE_ENOMEM;
    }
    c->prefix_len = strlen(c->prefix);
    c->port = o->port;
    c->db = o->db;
    c->connect_timeout = o->connect_timeout_ms;
    c->command_timeout = o->command_timeout_ms;
    c->clock = monotonic_ms;
    rdl_xorshift_seed(&c->xs);
    c->rng.fn = rdl_xorshift_next;
    c->rng.arg = &c->xs;
    rdl_backoff_init(&c->reconnect, REDLEASE_JITTER_FULL, o->reconnect_min_ms, o->reconnect_max_ms);
    c->armed_at = -1;
    c->stall_since = -1;
    c->conn = RDL_CONN_IDLE;
    c->wake.idx = RDL_HEAP_OUT;
    c->transport_new = rdl_transport_hiredis_new;
    *out = c;
    return REDLEASE_OK;
}

int redlease_client_set_clock(redlease_client *c, redlease_clock_fn fn, void *arg)
{
    if (!c || !fn || c->loop) return REDLEASE_EINVAL;
    c->clock = fn;
    c->clock_arg = arg;
    return REDLEASE_OK;
}

int redlease_client_set_rng(redlease_client *c, redlease_rng_fn fn, void *arg)
{
    if (!c || !fn) return REDLEASE_EINVAL;
    c->rng.fn = fn;
    c->rng.arg = arg;
    return REDLEASE_OK;
}

void redlease_client_set_event_cb(redlease_client *c, redlease_event_cb fn, void *arg)
{
    if (!c) return;
    c->event_cb = fn;
    c->event_arg = arg;
}

const char *redlease_client_errstr(const redlease_client *c) { return c ? c->errstr : ""; }

int redlease_client_connected(const redlease_client *c) { return c && rdl_client_ready(c); }

void redlease_client_stats(const redlease_client *c, redlease_stats *out)
{
    if (!out) return;
    if (!c) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = c->stats;
}

void rdl_client_set_transport_factory(redlease_client *c,
                                     int (*fn)(rdl_transport *, redlease_client *,
                                               const redlease_loop_ops *, void *))
{
    c->transport_new = fn;
}

/* ----------------------------------------------------------- the timer */

/* Arms the loop timer for the earliest thing to do. Called when leaving the
 * library, so the adapter never sees a timer_set from inside itself. */
static void arm(redlease_client *c)
{
    if (!c->loop) return;
    int64_t at;
    int hs_failed = c->hs_failed && c->conn == RDL_CONN_HANDSHAKE;
    /* What waited for a connection that broke again before the timer sent
     * it waits for the next one: due now only while the link is ready. */
    int flush = c->flush_needed && rdl_client_ready(c);
    int drop = c->drop_status && c->conn == RDL_CONN_DOWN;
    if (!rdl_list_empty(&c->notify) || flush || hs_failed || drop || c->dead || c->close_check) {
        at = 0; /* due now */
    } else {
        rdl_heap_node *top = rdl_heap_top(&c->heap);
        at = top ? top->at : RDL_NEVER;
    }
    int64_t after;
    if (at == RDL_NEVER) {
        after = -1;
    } else {
        int64_t now = rdl_now(c);
        after = at > now ? at - now : 0;
        at = now + after;
    }
    /* Same absolute deadline as last time: nothing to tell the loop. */
    if (after >= 0 && at == c->armed_at) return;
    if (after < 0 && c->armed_at < 0) return;
    c->armed_at = after < 0 ? -1 : at;
    c->loop->timer_set(c->loop_data, after);
}

void rdl_enter(redlease_client *c) { c->depth++; }

static void teardown(redlease_client *c);

void rdl_leave(redlease_client *c)
{
    if (--c->depth > 0) return;
    /* Freed from inside a transport callback: hiredis must not be freed
     * there, so arm() (c->dead) asks the loop for an immediate tick. */
    arm(c);
}

/* ---------------------------------------------------------- connection */

/* The client's own deadline: the connection's, or the end of a graceful
 * close if that comes first. */
static void schedule_conn(redlease_client *c, int64_t at)
{
    c->conn_at = at;
    if (c->closing && c->close_deadline < at) at = c->close_deadline;
    if (c->wake.idx != RDL_HEAP_OUT) rdl_heap_update(&c->heap, &c->wake, at);
}

static void reconnect_later(redlease_client *c, int64_t now)
{
    int64_t d = rdl_backoff_next(&c->reconnect, &c->rng);
    if (d < 1) d = 1; /* a deadline at "now" inside the timer would never fire */
    c->conn = RDL_CONN_BACKOFF;
    schedule_conn(c, now + d);
    emit_conn(c, REDLEASE_EV_RECONNECTING, REDLEASE_OK, d);
}

static void start_connect(redlease_client *c, int64_t now)
{
    rdl_endpoint ep = {c->host, c->port, c->unix_path};
    c->hs_failed = 0;
    c->flush_needed = 0;
    int rc = c->tr.ops->connect(c->tr.self, &ep);
    if (rc) {
        c->stats.disconnects++;
        emit_conn(c, REDLEASE_EV_DISCONNECTED, rc, -1);
        reconnect_later(c, now);
        return;
    }
    c->conn = RDL_CONN_CONNECTING;
    schedule_conn(c, now + c->connect_timeout);
}

static int status_is_definite(int status)
{
    return status == REDLEASE_EAUTH || status == REDLEASE_EPERM || status == REDLEASE_ECONFIG;
}

/* Remembers why the connection failed, for the operations that wait for
 * one; a refusal retrying cannot cure ends those that would wait for ever. */
static void conn_failed(redlease_client *c, int status, int64_t now)
{
    c->conn_error = status;
    c->conn_definite = status_is_definite(status);
    if (!c->conn_definite) return;
    for (rdl_list *n = c->locks.next; n != &c->locks;) {
        struct redlease_lock *lk = RDL_CONTAINER(n, struct redlease_lock, link);
        n = n->next; /* nothing is freed here: callbacks only get queued */
        if (!c->dead) rdl_lock_on_refused(lk, status, now);
    }
}

/* Drops the connection we have (timeout, failed handshake, a reply that
 * says it is no use); never called from inside a transport callback. */
static void drop_connection(redlease_client *c, int status, const char *why, int64_t now)
{
    if (why) rdl_set_errstr(c, why, strlen(why));
    c->hs_failed = 0;
    c->drop_status = 0;
    c->conn = RDL_CONN_BACKOFF; /* before close: NULL replies see "not ready" */
    c->tr.ops->close(c->tr.self);
    c->stats.disconnects++;
    emit_conn(c, REDLEASE_EV_DISCONNECTED, status, -1);
    conn_failed(c, status, now);
    reconnect_later(c, now);
}

int redlease_client_attach_loop(redlease_client *c, const redlease_loop_ops *ops, void *loop_data)
{
    if (!c || !ops || !ops->attach || !ops->timer_set || !ops->detach) return REDLEASE_EINVAL;
    if (c->loop || c->dead || c->closing) return REDLEASE_EINVAL;
    int rc = rdl_heap_insert(&c->heap, &c->wake, RDL_NEVER);
    if (rc) return rc;
    rc = c->transport_new(&c->tr, c, ops, loop_data);
    if (rc) {
        rdl_heap_remove(&c->heap, &c->wake);
        return rc;
    }
    c->loop = ops;
    c->loop_data = loop_data;
    rdl_enter(c);
    start_connect(c, rdl_now(c));
    rdl_leave(c);
    return REDLEASE_OK;
}

static void handshake_send(redlease_client *c, int kind, int script, int argc, const char **argv)
{
    rdl_req *req = rdl_calloc(1, sizeof *req);
    if (!req) {
        c->hs_failed = REDLEASE_ENOMEM;
        return;
    }
    req->kind = kind;
    req->script = script;
    req->t0 = rdl_now(c);
    req->epoch = c->epoch + 1;
    size_t lens[4];
    for (int i = 0; i < argc; i++) lens[i] = strlen(argv[i]);
    if (rdl_client_submit(c, req, argc, argv, lens)) {
        rdl_free(req);
        c->hs_failed = REDLEASE_ECONN;
        return;
    }
    c->hs_pending++;
}

void rdl_core_on_connected(redlease_client *c, int status, const char *detail)
{
    if (c->dead || c->conn != RDL_CONN_CONNECTING) return;
    rdl_enter(c);
    int64_t now = rdl_now(c);
    if (status) {
        rdl_set_errstr(c, detail, detail ? strlen(detail) : 0);
        c->stats.disconnects++;
        emit_conn(c, REDLEASE_EV_DISCONNECTED, status, -1);
        conn_failed(c, status, now);
        reconnect_later(c, now);
    } else {
        /* AUTH and SELECT come before anything else on the connection, and
         * PING proves the server serves us: without a password on a server
         * that wants one, every command would get NOAUTH. Replies arrive in
         * order, and nothing else is sent until all are answered. Scripts
         * need no loading: EVALSHA names them by their SHA-1, and the one
         * NOSCRIPT answer of a cold cache is resent by EVAL, which fills it. */
        c->conn = RDL_CONN_HANDSHAKE;
        c->hs_pending = 0;
        c->hs_failed = 0;
        schedule_conn(c, now + c->command_timeout);
        if (c->password) {
            const char *argv[3] = {"AUTH", c->username ? c->username : c->password, c->password};
            handshake_send(c, RDL_REQ_AUTH, -1, c->username ? 3 : 2, argv);
        }
        if (c->db) {
            char db[16];
            snprintf(db, sizeof db, "%d", c->db);
            const char *argv[2] = {"SELECT", db};
            handshake_send(c, RDL_REQ_SELECT, -1, 2, argv);
        }
        const char *argv[1] = {"PING"};
        handshake_send(c, RDL_REQ_PING, -1, 1, argv);
    }
    rdl_leave(c);
}

void rdl_core_note_error(redlease_client *c, const char *detail)
{
    rdl_set_errstr(c, detail, detail ? strlen(detail) : 0);
}

void rdl_core_on_disconnected(redlease_client *c, int status, const char *detail)
{
    if (c->dead) return;
    rdl_enter(c);
    c->conn = RDL_CONN_DOWN; /* before anyone hears of it: nothing is "held" now */
    c->drop_status = 0;      /* gone already */
    rdl_set_errstr(c, detail, detail ? strlen(detail) : 0);
    c->stats.disconnects++;
    emit_conn(c, REDLEASE_EV_DISCONNECTED, status, -1);
    conn_failed(c, status, rdl_now(c));
    reconnect_later(c, rdl_now(c));
    rdl_leave(c);
}

/* Why a handshake command failed. A plain error means the setting itself
 * was refused: AUTH's credentials, SELECT's database. */
static int handshake_status(const rdl_req *req, const rdl_reply *r)
{
    if (r->type != RDL_REPLY_ERROR) return REDLEASE_EPROTO;
    rdl_error_class e = rdl_error_classify(r->str, r->len);
    if (e.status != REDLEASE_EREDIS || e.transient) return e.status;
    if (req->kind == RDL_REQ_AUTH) return REDLEASE_EAUTH;
    if (req->kind == RDL_REQ_SELECT) return REDLEASE_ECONFIG;
    return REDLEASE_EREDIS;
}

static void handshake_reply(redlease_client *c, rdl_req *req, const rdl_reply *r)
{
    if (c->conn != RDL_CONN_HANDSHAKE || req->epoch != c->epoch + 1) return;
    c->hs_pending--;
    if (!r) return; /* the disconnect report follows */
    if (r->type != RDL_REPLY_STATUS && !c->hs_failed) { /* the first failure says why */
        if (r->type == RDL_REPLY_ERROR) rdl_set_errstr(c, r->str, r->len);
        c->hs_failed = handshake_status(req, r);
    }
    if (c->hs_pending == 0 && !c->hs_failed) {
        c->conn = RDL_CONN_READY;
        c->conn_error = 0;
        c->conn_definite = 0;
        c->epoch++;
        c->stats.connects++;
        rdl_backoff_init(&c->reconnect, c->reconnect.jitter, c->reconnect.base, c->reconnect.max);
        schedule_conn(c, RDL_NEVER);
        c->stall_since = -1;
        c->flush_needed = 1; /* sent from the timer, outside hiredis */
        emit_conn(c, REDLEASE_EV_CONNECTED, REDLEASE_OK, -1);
    }
}

void rdl_core_on_reply(redlease_client *c, void *p, const rdl_reply *r)
{
    rdl_req *req = p;
    int resent = 0;
    rdl_enter(c);
    c->reqs_out--; /* every submit is reported back exactly once */
    /* A request comes back without a reply only when the link is gone: stop
     * calling it ready before any lock (or event hook) looks at it. */
    if (!r && c->conn == RDL_CONN_READY) c->conn = RDL_CONN_DOWN;
    if (r) { /* how short a round trip can be: wait budgets end by it */
        int64_t rtt = rdl_now(c) - req->t0;
        if (req->epoch != c->rtt_epoch || rtt < c->rtt_floor) c->rtt_floor = rtt;
        c->rtt_epoch = req->epoch;
    }
    if (r && c->conn == RDL_CONN_READY && c->stall_since >= 0) { /* the link is alive */
        c->stall_since = -1;
        schedule_conn(c, RDL_NEVER);
    }
    if (r && r->type == RDL_REPLY_ERROR && req->lk && c->conn == RDL_CONN_READY) {
        /* READONLY (we reach a replica now), NOAUTH (we lost our login):
         * nothing more is sent on this connection; the timer replaces it. */
        rdl_error_class e = rdl_error_classify(r->str, r->len);
        if (e.reconnect) {
            rdl_set_errstr(c, r->str, r->len);
            c->drop_status = e.status;
            c->conn = RDL_CONN_DOWN;
        }
    }
    if (!c->dead) {
        if (req->lk)
            resent = rdl_lock_on_reply(req, r, rdl_now(c));
        else
            handshake_reply(c, req, r);
    }
    if (!resent) {
        if (req->lk) rdl_lock_unref(req->lk);
        rdl_free(req);
    }
    if (c->closing) c->close_check = 1; /* maybe the last reply it waited for */
    rdl_leave(c);
}

/* Redis answers in order, so when a command times out nothing sent after
 * it has been answered either. If the connection then stays silent for
 * twice the command timeout from that command's send, it is taken for dead
 * (a half-open TCP connection, a peer gone without a reset, an adapter
 * that lost an error) and dropped, so the client reconnects instead of
 * timing out every command forever. Any reply cancels the check.
 * The check is never due sooner than a command timeout from now: when the
 * loop itself was blocked, the reply may be sitting unread in the socket,
 * and the loop must get to poll it first (loops run timers before I/O). */
void rdl_client_note_timeout(redlease_client *c, int64_t sent_at, int64_t now)
{
    if (c->conn != RDL_CONN_READY || c->stall_since >= 0) return; /* oldest one counts */
    int64_t at = sent_at + 2 * c->command_timeout;
    if (at < now + c->command_timeout) at = now + c->command_timeout;
    c->stall_since = sent_at;
    schedule_conn(c, at);
}

int rdl_client_submit(redlease_client *c, rdl_req *req, int argc, const char **argv, const size_t *lens)
{
    int rc = c->tr.ops->submit(c->tr.self, argc, argv, lens, req);
    if (rc == 0) {
        c->stats.commands_sent++;
        c->reqs_out++;
    }
    return rc;
}

static void conn_run(redlease_client *c, int64_t now)
{
    switch (c->conn) {
    case RDL_CONN_BACKOFF:
        if (now >= c->conn_at) start_connect(c, now);
        break;
    case RDL_CONN_CONNECTING:
        if (now >= c->conn_at) drop_connection(c, REDLEASE_ETIMEDOUT, "connect timed out", now);
        break;
    case RDL_CONN_HANDSHAKE:
        if (c->hs_failed)
            drop_connection(c, c->hs_failed, NULL, now);
        else if (now >= c->conn_at)
            drop_connection(c, REDLEASE_ETIMEDOUT, "handshake timed out", now);
        break;
    case RDL_CONN_READY:
        if (c->stall_since >= 0 && now >= c->conn_at)
            drop_connection(c, REDLEASE_ETIMEDOUT, "no reply for twice the command timeout", now);
        break;
    case RDL_CONN_DOWN:
        if (c->drop_status) drop_connection(c, c->drop_status, NULL, now);
        break;
    default:
        break;
    }
    /* Whatever ran, the client's deadline is now in the future, so the timer
     * loop makes progress; a passed close deadline is handled there. */
    int64_t at = c->conn_at > now ? c->conn_at : RDL_NEVER;
    if (c->closing && c->close_deadline > now && c->close_deadline < at) at = c->close_deadline;
    rdl_heap_update(&c->heap, &c->wake, at);
}

/* Sends what waited for the connection, and re-verifies held leases at once:
 * the server may have restarted and lost them. */
static void flush(redlease_client *c, int64_t now)
{
    c->flush_needed = 0;
    for (rdl_list *n = c->locks.next; n != &c->locks; n = n->next)
        rdl_lock_on_ready(RDL_CONTAINER(n, struct redlease_lock, link), now);
    while (!rdl_list_empty(&c->waiting) && rdl_client_ready(c))
        rdl_lock_send_waiting(RDL_CONTAINER(c->waiting.next, struct redlease_lock, wait_link), now);
}

/* Done when every callback owed has run and nothing is left to send or to
 * hear back (or the deadline passed). O(1): close waits on counters. */
static int close_finished(redlease_client *c, int64_t now)
{
    if (!rdl_list_empty(&c->notify)) return 0; /* owed callbacks first */
    if (now >= c->close_deadline) return 1;
    return c->reqs_out == 0 && rdl_list_empty(&c->waiting) && c->release_retries == 0;
}

void redlease_client_on_timer(redlease_client *c)
{
    if (!c || c->depth) return; /* never re-entered from inside the library */
    c->stats.wakeups++;
    rdl_enter(c);
    c->armed_at = -1; /* the one-shot timer has fired */
    c->close_check = 0;
    int64_t now = rdl_now(c);
    while (!c->dead) {
        if ((c->hs_failed && c->conn == RDL_CONN_HANDSHAKE) ||
            (c->drop_status && c->conn == RDL_CONN_DOWN))
            conn_run(c, now);
        if (c->flush_needed && rdl_client_ready(c)) flush(c, now);
        rdl_heap_node *top = rdl_heap_top(&c->heap);
        if (top && top->at <= now) {
            if (top == &c->wake)
                conn_run(c, now);
            else
                rdl_lock_run(RDL_CONTAINER(top, struct redlease_lock, wake), now);
            continue;
        }
        if (!rdl_list_empty(&c->notify)) {
            struct redlease_lock *lk = RDL_CONTAINER(c->notify.next, struct redlease_lock, notify_link);
            rdl_lock_deliver(lk);
            now = rdl_now(c); /* user code ran: deadlines are judged by the clock */
            continue;
        }
        if (c->closing && close_finished(c, now)) {
            redlease_close_cb done = c->close_cb;
            void *arg = c->close_arg;
            c->dead = 1; /* no callbacks after done */
            if (done) done(c, arg);
            break;
        }
        break;
    }
    c->depth--;
    if (c->dead) {
        teardown(c);
        return;
    }
    arm(c);
}

/* ---------------------------------------------------------- ending */

static void teardown(redlease_client *c)
{
    c->dead = 1;
    c->depth = 1; /* the NULL replies below must not re-arm the timer */
    if (c->tr.ops) {
        c->tr.ops->close(c->tr.self); /* every request comes back now, NULL */
        c->tr.ops->destroy(c->tr.self);
        c->tr.ops = NULL;
    }
    if (c->loop) c->loop->detach(c->loop_data);
    while (!rdl_list_empty(&c->locks))
        rdl_lock_destroy(RDL_CONTAINER(c->locks.next, struct redlease_lock, link));
    rdl_heap_free(&c->heap);
    rdl_free(c->host);
    rdl_free(c->unix_path);
    rdl_free(c->username);
    rdl_free(c->password);
    rdl_free(c->prefix);
    rdl_free(c);
}

void redlease_client_free(redlease_client *c)
{
    if (!c || c->dead) return;
    rdl_enter(c);
    /* Every handle hears its end now; calls made from those callbacks see
     * c->dead and return REDLEASE_ECANCELED. */
    c->dead = 1;
    c->freeing = 1;
    for (rdl_list *n = c->locks.next; n != &c->locks; n = n->next)
        rdl_lock_end_by_client(RDL_CONTAINER(n, struct redlease_lock, link));
    /* Releases asked for from those callbacks, of handles ended earlier. */
    while (!rdl_list_empty(&c->notify))
        rdl_lock_deliver(RDL_CONTAINER(c->notify.next, struct redlease_lock, notify_link));
    c->freeing = 0;
    /* A graceful close under way ends here too: its done callback is owed
     * exactly once. It runs last, while c is still allocated (dead: any
     * call on it does nothing). */
    if (c->closing && c->close_cb) {
        redlease_close_cb done = c->close_cb;
        c->close_cb = NULL;
        done(c, c->close_arg);
    }
    c->depth--;
    if (c->depth == 0) teardown(c);
    /* else the outermost entry finishes it (see rdl_leave / on_timer) */
}

void redlease_client_close(redlease_client *c, redlease_close_cb done, void *arg)
{
    if (!c || c->dead || c->closing) return;
    c->closing = 1;
    c->close_cb = done;
    c->close_arg = arg;
    if (!c->loop) {
        /* No loop: nothing can be sent nor delivered later. Acts as free,
         * which owes done. */
        redlease_client_free(c);
        return;
    }
    rdl_enter(c);
    int64_t now = rdl_now(c);
    c->close_deadline = now + c->command_timeout;
    schedule_conn(c, c->conn_at);
    for (rdl_list *n = c->locks.next; n != &c->locks; n = n->next)
        rdl_lock_close(RDL_CONTAINER(n, struct redlease_lock, link), now);
    c->close_check = 1; /* maybe nothing is pending: done on the next tick */
    rdl_leave(c);
}
