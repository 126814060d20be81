/* SPDX-License-Identifier: MIT */
/* One Redis connection: connect, handshake, the stall rule, reconnect with
 * backoff, and the transport's reports (src/conn.h says what it tells its
 * owner; docs/design.md, section 1, draws the states).
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "conn.h"
#include "errors.h"
#include "heap.h"

static int64_t now_of(const rdl_conn *cn) { return rdl_clock_now(cn->clock); }

static void say_error(rdl_conn *cn, const char *text, size_t len)
{
    cn->owner_ops->error(cn->owner, text, len);
}

static void say_error_str(rdl_conn *cn, const char *text)
{
    say_error(cn, text, text ? strlen(text) : 0);
}

static void emit(rdl_conn *cn, int type, int status, int64_t retry_in)
{
    cn->owner_ops->event(cn->owner, type, status, retry_in);
}

/* The name of the address set now (rdl_conn_name). */
static void rename_conn(rdl_conn *cn)
{
    rdl_addr_name(cn->name, sizeof cn->name, cn->host, cn->port, cn->unix_path);
}

static void schedule(rdl_conn *cn, int64_t at)
{
    cn->at = at;
    cn->owner_ops->deadline(cn->owner, at);
}

/* ------------------------------------------------------------- creation */

int rdl_conn_init(rdl_conn *cn, const rdl_conn_config *cfg, const rdl_conn_owner *ops, void *owner,
                  rdl_clock *clock, const rdl_rng *rng)
{
    memset(cn, 0, sizeof *cn);
    cn->owner_ops = ops;
    cn->owner = owner;
    cn->clock = clock;
    cn->rng = rng;
    int ok = 1;
    cn->host = rdl_strdup(cfg->unix_path ? NULL : cfg->host, &ok);
    cn->unix_path = rdl_strdup(cfg->unix_path, &ok);
    cn->username = rdl_strdup(cfg->username, &ok);
    cn->password = rdl_strdup(cfg->password, &ok);
    if (cfg->tls && cfg->tls->enable) {
        cn->tls = *cfg->tls;
        cn->tls.ca_file = rdl_strdup(cfg->tls->ca_file, &ok);
        cn->tls.ca_dir = rdl_strdup(cfg->tls->ca_dir, &ok);
        cn->tls.cert_file = rdl_strdup(cfg->tls->cert_file, &ok);
        cn->tls.key_file = rdl_strdup(cfg->tls->key_file, &ok);
        cn->tls.server_name = rdl_strdup(cfg->tls->server_name, &ok);
    }
    cn->port = cfg->port;
    rename_conn(cn);
    cn->db = cfg->db;
    cn->verify_primary = cfg->verify_primary;
    cn->hold_backoff = cfg->hold_backoff;
    cn->probe = cfg->probe;
    cn->read_clock = cfg->read_clock;
    cn->read_uptime = cfg->read_uptime;
    cn->connect_timeout = cfg->connect_timeout;
    cn->command_timeout = cfg->command_timeout;
    rdl_backoff_init(&cn->reconnect, REDLEASE_JITTER_FULL, cfg->reconnect_min, cfg->reconnect_max);
    cn->state = RDL_CONN_IDLE;
    cn->stall_since = -1;
    return ok ? REDLEASE_OK : REDLEASE_ENOMEM;
}

void rdl_conn_settings(const rdl_conn *cn, rdl_conn_config *out)
{
    memset(out, 0, sizeof *out);
    out->host = cn->host;
    out->unix_path = cn->unix_path;
    out->port = cn->port;
    out->db = cn->db;
    out->username = cn->username;
    out->password = cn->password;
    out->connect_timeout = cn->connect_timeout;
    out->command_timeout = cn->command_timeout;
    out->reconnect_min = cn->reconnect.base;
    out->reconnect_max = cn->reconnect.max;
    out->tls = &cn->tls;
    out->verify_primary = cn->verify_primary;
    out->hold_backoff = cn->hold_backoff;
    out->probe = cn->probe;
    out->read_clock = cn->read_clock;
    out->read_uptime = cn->read_uptime;
}

void rdl_conn_free(rdl_conn *cn)
{
    if (cn->tr.ops) {
        cn->tr.ops->close(cn->tr.self); /* every request comes back now, NULL */
        cn->tr.ops->destroy(cn->tr.self);
        cn->tr.ops = NULL;
    }
    rdl_free(cn->host);
    rdl_free(cn->unix_path);
    rdl_free(cn->username);
    rdl_free(cn->password);
    cn->host = cn->unix_path = cn->username = cn->password = NULL;
    rdl_free((char *)cn->tls.ca_file);
    rdl_free((char *)cn->tls.ca_dir);
    rdl_free((char *)cn->tls.cert_file);
    rdl_free((char *)cn->tls.key_file);
    rdl_free((char *)cn->tls.server_name);
    memset(&cn->tls, 0, sizeof cn->tls);
}

int rdl_conn_attach(rdl_conn *cn, rdl_transport_factory make, struct rdl_loop *loop)
{
    if (cn->tr.ops) { /* an earlier attach whose owner failed later: never connected */
        cn->tr.ops->destroy(cn->tr.self);
        cn->tr.ops = NULL;
    }
    return make(&cn->tr, cn, loop);
}

void rdl_conn_backoff_reset(rdl_conn *cn) { rdl_backoff_reset(&cn->reconnect); }

/* ------------------------------------------------------ losing the link */

static void reconnect_later(rdl_conn *cn, int64_t now)
{
    /* A link dropped to go elsewhere goes at once: the new address has not
     * failed yet (the count of failures still grows if it does). */
    int64_t d = cn->go_now ? 1 : rdl_backoff_next(&cn->reconnect, cn->rng);
    cn->go_now = 0;
    if (d < 1) d = 1; /* a deadline at "now" inside the timer would never fire */
    cn->state = RDL_CONN_BACKOFF;
    schedule(cn, now + d);
    emit(cn, REDLEASE_EV_RECONNECTING, REDLEASE_OK, d);
}

static void link_failed(rdl_conn *cn, int status, int answered, int64_t now);

static void start_connect(rdl_conn *cn, int64_t now)
{
    if (!cn->host && !cn->unix_path) { /* no address yet: rdl_conn_set_endpoint() */
        cn->state = RDL_CONN_BACKOFF;
        schedule(cn, RDL_NEVER);
        return;
    }
    rdl_endpoint ep = {cn->host, cn->port, cn->unix_path, cn->tls.enable ? &cn->tls : NULL};
    cn->hs_failed = 0;
    int rc = cn->tr.ops->connect(cn->tr.self, &ep); /* its text is noted already */
    if (rc) {
        link_failed(cn, rc, 0, now);
        return;
    }
    cn->state = RDL_CONN_CONNECTING;
    schedule(cn, now + cn->connect_timeout);
}

void rdl_conn_connect(rdl_conn *cn, int64_t now) { start_connect(cn, now); }

static int status_is_definite(int status)
{
    return status == REDLEASE_EAUTH || status == REDLEASE_EPERM || status == REDLEASE_ECONFIG ||
           status == REDLEASE_ETLS;
}

/* Remembers why the connection failed (answered: the server's error reply
 * to the handshake), for the operations that wait for one; a refusal
 * retrying cannot cure ends those that would wait for ever. */
static void conn_failed(rdl_conn *cn, int status, int answered, int64_t now)
{
    cn->error = status;
    cn->hs_answered = answered;
    cn->definite = status_is_definite(status);
    if (cn->definite) cn->owner_ops->refused(cn->owner, status, now);
}

/* Every way a link ends or fails to start (the connect refused at once or
 * later, dropped by us, lost by the transport), once its text is noted:
 * counted, told, remembered for what waits, and a reconnect after backoff. */
static void link_failed(rdl_conn *cn, int status, int answered, int64_t now)
{
    cn->disconnects++;
    emit(cn, REDLEASE_EV_DISCONNECTED, status, -1);
    rename_conn(cn); /* the link is gone: from now on, where the next goes */
    conn_failed(cn, status, answered, now);
    reconnect_later(cn, now);
}

/* Drops the connection we have (timeout, failed handshake, a reply that
 * says it is no use); never called from inside a transport callback. */
static void drop_connection(rdl_conn *cn, int status, const char *why, int64_t now)
{
    /* the handshake's error reply (LOADING, MISCONF): the server answered,
     * and what waits for the link fails as its answer (rdl_conn_status) */
    int answered = cn->state == RDL_CONN_HANDSHAKE && status == REDLEASE_EREDIS && cn->hs_failed == status;
    if (why) say_error_str(cn, why);
    cn->hs_failed = 0;
    cn->drop_status = 0;
    cn->state = RDL_CONN_BACKOFF; /* before close: NULL replies see "not ready" */
    cn->tr.ops->close(cn->tr.self);
    link_failed(cn, status, answered, now);
}

/* ------------------------------------------------------------ handshake */

static void handshake_send(rdl_conn *cn, int kind, int argc, const char **argv)
{
    rdl_req *req = rdl_calloc(1, sizeof *req);
    if (!req) {
        cn->hs_failed = REDLEASE_ENOMEM;
        return;
    }
    req->kind = kind;
    req->script = -1;
    req->t0 = now_of(cn);
    req->epoch = cn->epoch + 1;
    size_t lens[4];
    for (int i = 0; i < argc; i++) lens[i] = strlen(argv[i]);
    if (rdl_conn_submit(cn, req, argc, argv, lens)) {
        rdl_free(req);
        cn->hs_failed = REDLEASE_ECONN;
        return;
    }
    cn->hs_pending++;
}

/* AUTH and SELECT come before anything else on the connection, and PING
 * proves the server serves us: without a password on a server that wants
 * one, every command would get NOAUTH. Replies arrive in order, and nothing
 * else is sent until all are answered. Scripts need no loading: EVALSHA
 * names them by their SHA-1, and the one NOSCRIPT answer of a cold cache is
 * resent by EVAL, which fills it. With the probe, the link is ready
 * knowing what the server has (in the same round trip): its conditional
 * commands, and whether it runs scripts for us at all, before a lock sends
 * anything on it (a SET NX on a server that could then not release it). */
static void handshake_start(rdl_conn *cn, int64_t now)
{
    cn->state = RDL_CONN_HANDSHAKE;
    cn->hs_pending = 0;
    cn->hs_failed = 0;
    cn->native = 0; /* each link asks again: a failover may have moved us */
    cn->scripts_off = 0;
    cn->hs_ping_answered = 0;
    schedule(cn, now + cn->command_timeout);
    if (cn->password) {
        const char *argv[3] = {"AUTH", cn->username ? cn->username : cn->password, cn->password};
        handshake_send(cn, RDL_REQ_AUTH, cn->username ? 3 : 2, argv);
    }
    if (cn->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", cn->db);
        const char *argv[2] = {"SELECT", db};
        handshake_send(cn, RDL_REQ_SELECT, 2, argv);
    }
    const char *argv[1] = {"PING"};
    handshake_send(cn, RDL_REQ_PING, 1, argv);
    if (cn->read_clock) {
        const char *time[1] = {"TIME"};
        handshake_send(cn, RDL_REQ_TIME, 1, time);
    }
    if (cn->read_uptime) {
        const char *info[2] = {"INFO", "server"};
        handshake_send(cn, RDL_REQ_UPTIME, 2, info);
    }
    if (cn->probe) {
        const char *native[4] = {"COMMAND", "INFO", "DELIFEQ", "DELEX"};
        handshake_send(cn, RDL_REQ_PROBE, 4, native);
        const char *eval[3] = {"EVAL", "return 1", "0"};
        handshake_send(cn, RDL_REQ_SCRIPTS, 3, eval);
    }
    if (cn->verify_primary) {
        const char *role[1] = {"ROLE"};
        handshake_send(cn, RDL_REQ_ROLE, 1, role);
    }
}

/* ROLE's answer: 1 for a primary ("master"); else 0, with what it is in
 * the error text (a replica, a Sentinel: a failover under way, or an
 * address that is stale). */
static int role_is_primary(rdl_conn *cn, const rdl_reply *r)
{
    if (r->type == RDL_REPLY_ARRAY && r->elements >= 1 && r->element[0].type == RDL_REPLY_STRING) {
        const rdl_reply *e = &r->element[0];
        if (e->len == 6 && memcmp(e->str, "master", 6) == 0) return 1;
        char text[96];
        snprintf(text, sizeof text, "the server is not the primary (ROLE: %.*s)",
                 (int)(e->len < 32 ? e->len : 32), e->str);
        say_error_str(cn, text);
        return 0;
    }
    if (r->type == RDL_REPLY_ERROR) say_error(cn, r->str, r->len);
    return 0;
}

static int is_handshake(const rdl_req *req)
{
    return req->kind >= RDL_REQ_AUTH && req->kind <= RDL_REQ_ROLE;
}

/* Why a handshake command failed. A plain error means the setting itself
 * was refused: AUTH's credentials, SELECT's database. */
static int handshake_status(const rdl_req *req, const rdl_reply *r)
{
    if (r->type != RDL_REPLY_ERROR) return REDLEASE_EPROTO;
    rdl_error_class e = rdl_error_classify(r->str, r->len);
    /* WRONGTYPE is about a resource's key, and a handshake touches none:
     * a plain refusal here */
    if (e.wrongtype) e.status = REDLEASE_EREDIS;
    if (e.status != REDLEASE_EREDIS || e.transient) return e.status;
    if (req->kind == RDL_REQ_AUTH) return REDLEASE_EAUTH;
    if (req->kind == RDL_REQ_SELECT) return REDLEASE_ECONFIG;
    return REDLEASE_EREDIS;
}

/* Which conditional commands the server has. Redis answers COMMAND INFO
 * with nil for a command it does not have; an error (an ACL without
 * COMMAND, a proxy) means none. */
static void probe_reply(rdl_conn *cn, const rdl_reply *r)
{
    int native = 0;
    if (r->type == RDL_REPLY_ARRAY && r->elements == 2) {
        if (r->element[0].type == RDL_REPLY_ARRAY && r->element[0].elements > 0) native |= RDL_NATIVE_DELIFEQ;
        if (r->element[1].type == RDL_REPLY_ARRAY && r->element[1].elements > 0) native |= RDL_NATIVE_DELEX;
    }
    cn->native = native;
}

/* Whether the server runs scripts for us: EVAL refused (unknown to it, an
 * ACL without @scripting, Valkey without its Lua engine) says no, and
 * why; any other answer, yes (a script that fails later says so then). */
static void scripts_reply(rdl_conn *cn, const rdl_reply *r)
{
    if (r->type == RDL_REPLY_ERROR && rdl_error_refuses_scripts(r->str, r->len))
        rdl_conn_scripts_refused(cn, r->str, r->len);
}

void rdl_conn_scripts_refused(rdl_conn *cn, const char *text, size_t len)
{
    int news = !cn->scripts_off;
    cn->scripts_off = 1;
    if (len >= sizeof cn->scripts_why) len = sizeof cn->scripts_why - 1;
    memcpy(cn->scripts_why, text, len);
    cn->scripts_why[len] = '\0';
    if (news && cn->state == RDL_CONN_READY) { /* since the handshake: said now (else once ready) */
        say_error_str(cn, cn->scripts_why);
        emit(cn, REDLEASE_EV_SCRIPTS_OFF, REDLEASE_ENOTSUP, -1);
    }
}

static void become_ready(rdl_conn *cn)
{
    cn->state = RDL_CONN_READY;
    cn->error = 0;
    cn->definite = 0;
    cn->epoch++;
    cn->connects++;
    if (!cn->hold_backoff) rdl_backoff_reset(&cn->reconnect);
    schedule(cn, RDL_NEVER);
    cn->stall_since = -1;
    cn->owner_ops->ready(cn->owner); /* it sends what waited from its timer, outside hiredis */
    emit(cn, REDLEASE_EV_CONNECTED, REDLEASE_OK, -1);
    if (cn->scripts_off) { /* said once per link */
        say_error_str(cn, cn->scripts_why);
        emit(cn, REDLEASE_EV_SCRIPTS_OFF, REDLEASE_ENOTSUP, -1);
    }
}

/* A decimal of at most 18 digits (TIME's seconds and microseconds), or -1. */
static int64_t small_decimal(const rdl_reply *r)
{
    if (r->type != RDL_REPLY_STRING || r->len == 0 || r->len > 18) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < r->len; i++) {
        if (r->str[i] < '0' || r->str[i] > '9') return -1;
        v = v * 10 + (r->str[i] - '0');
    }
    return v;
}

/* TIME's answer, [seconds, microseconds]: the server's clock minus ours,
 * ours taken halfway through the round trip. Anything else (an ACL
 * without TIME, a proxy) leaves the clock unknown, and records say 0:
 * it is for showing, never a reason to refuse the link. */
static void clock_reply(rdl_conn *cn, const rdl_req *req, const rdl_reply *r)
{
    if (r->type != RDL_REPLY_ARRAY || r->elements != 2) return;
    int64_t sec = small_decimal(&r->element[0]), usec = small_decimal(&r->element[1]);
    if (sec < 0 || usec < 0) return;
    int64_t now = now_of(cn);
    cn->clock_offset = sec * 1000 + usec / 1000 - (req->t0 + (now - req->t0) / 2);
    cn->clock_epoch = cn->epoch + 1;
}

/* INFO server's answer: its line "uptime_in_seconds:N" makes when the
 * server started on our clock, at the latest (N is whole seconds, and our
 * clock is read after the server wrote it). Anything else (INFO denied by
 * an ACL, a proxy) leaves it unknown: for a quorum's restart guard, which
 * then does not apply to that member (docs/design.md, 10). */
static void uptime_reply(rdl_conn *cn, const rdl_reply *r)
{
    static const char field[] = "uptime_in_seconds:";
    const size_t flen = sizeof field - 1;
    if (r->type != RDL_REPLY_STRING) return;
    for (size_t i = 0; i + flen < r->len; i++) {
        if ((i && r->str[i - 1] != '\n') || memcmp(r->str + i, field, flen) != 0) continue;
        int64_t secs = 0;
        size_t j = i + flen, digits = 0;
        for (; j < r->len && r->str[j] >= '0' && r->str[j] <= '9' && digits < 12; j++, digits++)
            secs = secs * 10 + (r->str[j] - '0');
        if (!digits) return;
        cn->started_at = now_of(cn) - secs * 1000;
        cn->started_epoch = cn->epoch + 1;
        return;
    }
}

static void handshake_reply(rdl_conn *cn, rdl_req *req, const rdl_reply *r)
{
    if (cn->state != RDL_CONN_HANDSHAKE || req->epoch != cn->epoch + 1) return;
    cn->hs_pending--;
    /* The link went with the probe unanswered though the server had
     * answered PING before it: some proxies (twemproxy) close a connection
     * on a command they do not know, COMMAND and EVAL among them. Asking
     * on every link would then cost every link: this connection asks no
     * more, and sends scripts. (A link that dies earlier, a restart or a
     * failover, says nothing of the probe.) */
    if (!r && (req->kind == RDL_REQ_PROBE || req->kind == RDL_REQ_SCRIPTS) && cn->hs_ping_answered)
        cn->probe = 0;
    if (!r) return; /* the disconnect report follows */
    if (req->kind == RDL_REQ_PING) cn->hs_ping_answered = 1;
    if (req->kind == RDL_REQ_PROBE) {
        probe_reply(cn, r);
    } else if (req->kind == RDL_REQ_SCRIPTS) {
        scripts_reply(cn, r);
    } else if (req->kind == RDL_REQ_TIME) {
        clock_reply(cn, req, r);
    } else if (req->kind == RDL_REQ_UPTIME) {
        uptime_reply(cn, r);
    } else if (req->kind == RDL_REQ_ROLE) {
        /* not the primary: transient, the owner asks where it is now */
        if (!cn->hs_failed && !role_is_primary(cn, r))
            cn->hs_failed = r->type == RDL_REPLY_ERROR ? handshake_status(req, r) : REDLEASE_ECONN;
    } else if (r->type != RDL_REPLY_STATUS && !cn->hs_failed) { /* the first failure says why */
        if (r->type == RDL_REPLY_ERROR) say_error(cn, r->str, r->len);
        cn->hs_failed = handshake_status(req, r);
    }
    if (cn->hs_pending == 0 && !cn->hs_failed) become_ready(cn);
}

/* ------------------------------------------------- the transport reports */

void rdl_conn_on_connected(rdl_conn *cn, int status, const char *detail)
{
    if (cn->owner_ops->ending(cn->owner) || cn->state != RDL_CONN_CONNECTING) return;
    cn->owner_ops->enter(cn->owner);
    int64_t now = now_of(cn);
    if (status) {
        say_error_str(cn, detail);
        link_failed(cn, status, 0, now);
    } else {
        handshake_start(cn, now);
    }
    cn->owner_ops->leave(cn->owner);
}

void rdl_conn_note_error(rdl_conn *cn, const char *detail) { say_error_str(cn, detail); }

void rdl_conn_on_disconnected(rdl_conn *cn, int status, const char *detail)
{
    if (cn->owner_ops->ending(cn->owner)) return;
    cn->owner_ops->enter(cn->owner);
    cn->state = RDL_CONN_DOWN; /* before anyone hears of it: nothing is "held" now */
    cn->drop_status = 0;       /* gone already */
    say_error_str(cn, detail);
    link_failed(cn, status, 0, now_of(cn));
    cn->owner_ops->leave(cn->owner);
}

/* How short a round trip can be on this connection: wait budgets end by it. */
static void note_rtt(rdl_conn *cn, const rdl_req *req, int64_t now)
{
    int64_t rtt = now - req->t0;
    if (req->epoch != cn->rtt_epoch || rtt < cn->rtt_floor) cn->rtt_floor = rtt;
    cn->rtt_epoch = req->epoch;
}

void rdl_conn_on_read_done(rdl_conn *cn)
{
    if (cn->owner_ops->drain) cn->owner_ops->drain(cn->owner);
}

void rdl_conn_read_begin(rdl_conn *cn)
{
    cn->owner_ops->enter(cn->owner);
    /* the replies of this read are timed by it (conn.h, rdl_clock) */
    cn->clock->read_at = cn->clock->fn(cn->clock->arg);
    cn->clock->reading = 1;
}

void rdl_conn_read_end(rdl_conn *cn)
{
    /* before the owner arms its timer: a delay counted from a past time
     * would be too long */
    rdl_clock_forget(cn->clock);
    cn->owner_ops->leave(cn->owner); /* never frees it (arms a timer at most) */
    rdl_conn_on_read_done(cn);       /* may */
}

void rdl_conn_on_reply(rdl_conn *cn, void *p, const rdl_reply *r)
{
    rdl_req *req = p;
    cn->owner_ops->enter(cn->owner);
    cn->reqs_out--; /* every submit is reported back exactly once */
    /* A request comes back without a reply only when the link is gone: stop
     * calling it ready before the owner (or an event hook) looks at it. */
    if (!r && cn->state == RDL_CONN_READY) cn->state = RDL_CONN_DOWN;
    if (r) {
        /* read once: the owner's reply handler reads it too (node.c) */
        int64_t now = now_of(cn);
        note_rtt(cn, req, now);
        cn->reply_now = now;
    }
    if (r && cn->state == RDL_CONN_READY && cn->stall_since >= 0) { /* the link is alive */
        cn->stall_since = -1;
        schedule(cn, RDL_NEVER);
    }
    if (r && r->type == RDL_REPLY_ERROR && !is_handshake(req) && cn->state == RDL_CONN_READY) {
        /* READONLY (we reach a replica now), NOAUTH (we lost our login):
         * nothing more is sent on this connection; the timer replaces it. */
        rdl_error_class e = rdl_error_classify(r->str, r->len);
        if (e.reconnect) {
            say_error(cn, r->str, r->len);
            cn->drop_status = e.status;
            cn->state = RDL_CONN_DOWN;
        }
    }
    if (is_handshake(req)) { /* the connection's own */
        if (!cn->owner_ops->ending(cn->owner)) handshake_reply(cn, req, r);
        rdl_free(req);
        req = NULL;
    }
    cn->owner_ops->reply(cn->owner, req, r);
    cn->owner_ops->leave(cn->owner);
}

void rdl_conn_on_push(rdl_conn *cn, void *req, const rdl_reply *r)
{
    cn->owner_ops->enter(cn->owner);
    if (!cn->owner_ops->ending(cn->owner)) cn->owner_ops->push(cn->owner, req, r);
    cn->owner_ops->leave(cn->owner);
}

/* ------------------------------------------------------ relays */

void rdl_relay_enter(void *module)
{
    const rdl_relay *r = module;
    r->ops->enter(r->owner);
}

void rdl_relay_leave(void *module)
{
    const rdl_relay *r = module;
    r->ops->leave(r->owner);
}

int rdl_relay_ending(void *module)
{
    const rdl_relay *r = module;
    return r->ops->ending(r->owner);
}

void rdl_relay_drain(void *module)
{
    const rdl_relay *r = module;
    r->ops->drain(r->owner);
}

/* ------------------------------------------------------ driven by owner */


void rdl_conn_restart(rdl_conn *cn, int status, const char *why)
{
    if (cn->state != RDL_CONN_CONNECTING && cn->state != RDL_CONN_HANDSHAKE &&
        cn->state != RDL_CONN_READY)
        return; /* none to drop: the next connect goes where it should */
    if (why) say_error_str(cn, why);
    cn->drop_status = status;
    cn->state = RDL_CONN_DOWN; /* nothing is sent on it, nothing reads as held */
}

static int same_address(const rdl_conn *cn, const char *host, int port)
{
    return cn->host && strcmp(cn->host, host) == 0 && cn->port == port;
}

int rdl_conn_set_address(rdl_conn *cn, const char *host, int port)
{
    if (same_address(cn, host, port)) return REDLEASE_OK;
    int ok = 1;
    char *copy = rdl_strdup(host, &ok);
    if (!ok) return REDLEASE_ENOMEM;
    rdl_free(cn->host);
    rdl_free(cn->unix_path);
    cn->unix_path = NULL;
    cn->host = copy;
    cn->port = port;
    /* a link to the old address keeps its name until it ends (link_failed) */
    if (cn->state == RDL_CONN_IDLE || cn->state == RDL_CONN_BACKOFF) rename_conn(cn);
    return REDLEASE_OK;
}

int rdl_conn_set_endpoint(rdl_conn *cn, const char *host, int port, int64_t now)
{
    if (same_address(cn, host, port)) return 0;
    if (rdl_conn_set_address(cn, host, port) != REDLEASE_OK) return REDLEASE_ENOMEM;
    if (cn->state == RDL_CONN_BACKOFF) {
        schedule(cn, now); /* waiting for an address, or to retry the old one */
        return 1;
    }
    if (cn->state != RDL_CONN_CONNECTING && cn->state != RDL_CONN_HANDSHAKE &&
        cn->state != RDL_CONN_READY)
        return 1; /* IDLE, or DOWN: the next connect goes there */
    char to[RDL_ADDR_NAME_MAX], why[sizeof to + 16];
    rdl_addr_name(to, sizeof to, host, port, NULL);
    snprintf(why, sizeof why, "moving to %s", to);
    rdl_conn_restart(cn, REDLEASE_ECONN, why);
    cn->go_now = 1;
    return 2;
}

/* A request the transport took is counted until it comes back. */
static int sent(rdl_conn *cn, int rc)
{
    if (rc == 0) {
        cn->commands_sent++;
        cn->reqs_out++;
    }
    return rc;
}

int rdl_conn_submit(rdl_conn *cn, rdl_req *req, int argc, const char **argv, const size_t *lens)
{
    return sent(cn, cn->tr.ops->submit(cn->tr.self, argc, argv, lens, req));
}

int rdl_conn_subscribe(rdl_conn *cn, rdl_req *req, int argc, const char **argv, const size_t *lens)
{
    return sent(cn, cn->tr.ops->subscribe(cn->tr.self, argc, argv, lens, req)); /* until its end */
}

/* Redis answers in order, so when a command times out nothing sent after
 * it has been answered either. If the connection then stays silent for
 * twice the command timeout from that command's send, it is taken for dead
 * (a half-open TCP connection, a peer gone without a reset, an adapter
 * that lost an error) and dropped, so the owner reconnects instead of
 * timing out every command forever. Any reply cancels the check.
 * The check is never due sooner than a command timeout from now: when the
 * loop itself was blocked, the reply may be sitting unread in the socket,
 * and the loop must get to poll it first (loops run timers before I/O). */
void rdl_conn_note_timeout(rdl_conn *cn, int64_t sent_at, int64_t now)
{
    if (cn->state != RDL_CONN_READY || cn->stall_since >= 0) return; /* oldest one counts */
    int64_t at = sent_at + 2 * cn->command_timeout;
    if (at < now + cn->command_timeout) at = now + cn->command_timeout;
    cn->stall_since = sent_at;
    schedule(cn, at);
}

void rdl_conn_run(rdl_conn *cn, int64_t now)
{
    switch (cn->state) {
    case RDL_CONN_BACKOFF:
        if (now >= cn->at) start_connect(cn, now);
        break;
    case RDL_CONN_CONNECTING:
        if (now >= cn->at) drop_connection(cn, REDLEASE_ETIMEDOUT, "connect timed out", now);
        break;
    case RDL_CONN_HANDSHAKE:
        if (cn->hs_failed)
            drop_connection(cn, cn->hs_failed, NULL, now);
        else if (now >= cn->at)
            drop_connection(cn, REDLEASE_ETIMEDOUT, "handshake timed out", now);
        break;
    case RDL_CONN_READY:
        if (cn->stall_since >= 0 && now >= cn->at)
            drop_connection(cn, REDLEASE_ETIMEDOUT, "no reply for twice the command timeout", now);
        break;
    case RDL_CONN_DOWN:
        if (cn->drop_status) drop_connection(cn, cn->drop_status, NULL, now);
        break;
    default:
        break;
    }
}
