/* SPDX-License-Identifier: MIT */
/* Sentinel: one connection to one Sentinel at a time, asking where the
 * primary is and subscribed to +switch-master (src/sentinel.h says what it
 * tells its owner; docs/design.md, section 8, why). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sentinel.h"

/* ---------------------------------------------------------- parsing */

int rdl_sentinel_parse_switch(const char *msg, size_t len, const char *name, char *host, size_t size,
                              int *port)
{
    /* five words: name, old host, old port, new host, new port */
    const char *w[5];
    size_t wn[5];
    int k = 0;
    size_t i = 0;
    while (i < len && k < 5) {
        while (i < len && msg[i] == ' ') i++;
        if (i == len) break;
        w[k] = msg + i;
        while (i < len && msg[i] != ' ') i++;
        wn[k] = (size_t)(msg + i - w[k]);
        k++;
    }
    while (i < len && msg[i] == ' ') i++;
    if (k != 5 || i != len) return 0;
    if (wn[0] != strlen(name) || memcmp(w[0], name, wn[0]) != 0) return 0;
    int p = rdl_addr_parse_port(w[4], wn[4]);
    if (p < 0 || wn[3] == 0 || wn[3] >= size) return 0;
    memcpy(host, w[3], wn[3]);
    host[wn[3]] = '\0';
    *port = p;
    return 1;
}

/* ------------------------------------------------------- asking */

/* A failure of the Sentinel we ask, named for it (its link's name). */
static void say(rdl_sentinel *s, const char *text, size_t len)
{
    char buf[RDL_ADDR_NAME_MAX + 320];
    const char *name = rdl_conn_name(&s->conn);
    int n = snprintf(buf, sizeof buf, "Sentinel %s: %.*s", name ? name : "?",
                     (int)(len < 300 ? len : 300), text);
    s->ops->error(s->relay.owner, buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* The owner's deadline for us: the link's, or the question's. */
static void tell_deadline(rdl_sentinel *s) { s->ops->deadline(s->relay.owner, rdl_sentinel_deadline(s)); }

/* This Sentinel is no use now: drop the link; its failure moves us on to
 * the next one (on_event). */
static void give_up(rdl_sentinel *s, int status, const char *why)
{
    say(s, why, strlen(why));
    rdl_conn_restart(&s->conn, status, NULL);
}

static rdl_req *new_req(int kind, int64_t now, uint64_t epoch)
{
    rdl_req *req = rdl_calloc(1, sizeof *req);
    if (req) {
        req->kind = kind;
        req->script = -1;
        req->t0 = now;
        req->epoch = epoch;
    }
    return req;
}

/* The question, and the subscription behind it on the same link: a
 * Sentinel runs both in one go, so no switch can fall between them. */
static void ask(rdl_sentinel *s)
{
    int64_t now = rdl_clock_now(s->clock);
    uint64_t epoch = rdl_conn_epoch(&s->conn);
    rdl_req *q = new_req(RDL_REQ_SENTINEL_QUERY, now, epoch);
    rdl_req *sub = new_req(RDL_REQ_SENTINEL_SUB, now, epoch);
    const char *qa[3] = {"SENTINEL", "get-master-addr-by-name", s->name};
    size_t ql[3] = {8, 23, strlen(s->name)};
    const char *sa[2] = {"SUBSCRIBE", "+switch-master"};
    size_t sl[2] = {9, 14};
    if (q && sub && rdl_conn_submit(&s->conn, q, 3, qa, ql) == 0) {
        s->query = q;
        s->answer_by = now + s->command_timeout; /* a Sentinel that hangs is left */
        tell_deadline(s);
        q = NULL;
        if (rdl_conn_subscribe(&s->conn, sub, 2, sa, sl) == 0) {
            s->sub = sub;
            sub = NULL;
        }
    }
    if (q || sub) give_up(s, q ? REDLEASE_ENOMEM : REDLEASE_ECONN, "could not ask");
    rdl_free(q);
    rdl_free(sub);
}

/* The primary is at host (len bytes) and port (text of plen bytes), as
 * a Sentinel said (asked, or announcing a switch); 0, or -1 for an
 * address that cannot be used. */
static int name_primary(rdl_sentinel *s, const char *host, size_t len, const char *port, size_t plen)
{
    int p = rdl_addr_parse_port(port, plen);
    if (len == 0 || len > 255 || p < 0) return -1;
    char h[256];
    memcpy(h, host, len);
    h[len] = '\0';
    s->ops->primary(s->relay.owner, h, p);
    return 0;
}

/* The answer to SENTINEL get-master-addr-by-name: [host, port], or nil
 * for a name this Sentinel does not monitor. A usable one makes the link
 * proved: its backoff, and the refusals counted, start again. */
static void answered(rdl_sentinel *s, const rdl_reply *r)
{
    if (r->type == RDL_REPLY_ARRAY && r->elements == 2 && r->element[0].type == RDL_REPLY_STRING &&
        r->element[1].type == RDL_REPLY_STRING &&
        name_primary(s, r->element[0].str, r->element[0].len, r->element[1].str,
                     r->element[1].len) == 0) {
        rdl_conn_backoff_reset(&s->conn);
        s->refused = 0;
        return;
    }
    if (r->type == RDL_REPLY_ERROR) {
        say(s, r->str, r->len);
        rdl_conn_restart(&s->conn, REDLEASE_EREDIS, NULL);
    } else if (r->type == RDL_REPLY_NIL) {
        char why[300];
        snprintf(why, sizeof why, "does not know master '%.200s'", s->name);
        give_up(s, REDLEASE_ECONN, why);
    } else {
        give_up(s, REDLEASE_EPROTO, "unexpected answer to SENTINEL get-master-addr-by-name");
    }
}

/* ------------------------------------------------- the connection's reports */

static void on_ready(void *owner) { ask(owner); }

/* One Sentinel refusing us may be one misconfigured: only when every one
 * has since the last answer is it the owner's business. */
static void on_refused(void *owner, int status, int64_t now)
{
    rdl_sentinel *s = owner;
    s->refused |= 1u << s->current;
    if (s->refused == (1u << s->naddrs) - 1) s->ops->refused(s->relay.owner, status, now);
}

static void on_reply(void *owner, rdl_req *req, const rdl_reply *r)
{
    rdl_sentinel *s = owner;
    if (!req) return; /* the handshake's */
    if (req == s->query) {
        s->query = NULL;
        tell_deadline(s);
        if (r) answered(s, r);
    } else if (req == s->sub) {
        s->sub = NULL; /* its end: the link is gone */
    }
    rdl_free(req);
}

/* ["message", "+switch-master", "NAME OLDHOST OLDPORT NEWHOST NEWPORT"];
 * the subscription's confirmation is ignored. */
static void on_push(void *owner, rdl_req *req, const rdl_reply *r)
{
    rdl_sentinel *s = owner;
    (void)req;
    if (r->type != RDL_REPLY_ARRAY || r->elements != 3) return;
    const rdl_reply *kind = &r->element[0], *msg = &r->element[2];
    if (kind->type != RDL_REPLY_STRING || kind->len != 7 || memcmp(kind->str, "message", 7) != 0 ||
        msg->type != RDL_REPLY_STRING)
        return;
    char host[256], port[8];
    int p;
    if (rdl_sentinel_parse_switch(msg->str, msg->len, s->name, host, sizeof host, &p)) {
        snprintf(port, sizeof port, "%d", p);
        name_primary(s, host, strlen(host), port, strlen(port));
    }
}

/* A link that failed or was dropped moves us on to the next Sentinel (the
 * connection's backoff paces the round); one we dropped to ask again stays. */
static void on_event(void *owner, int type, int status, int64_t retry_in)
{
    rdl_sentinel *s = owner;
    (void)status, (void)retry_in;
    if (type != REDLEASE_EV_DISCONNECTED) return;
    if (s->stay) {
        s->stay = 0;
        return;
    }
    if (s->naddrs < 2) return;
    s->current = (s->current + 1) % s->naddrs;
    rdl_conn_set_address(&s->conn, s->addrs[s->current].host, s->addrs[s->current].port);
}

static void on_error(void *owner, const char *text, size_t len)
{
    if (text && len) say(owner, text, len);
}

static void on_deadline(void *owner, int64_t at)
{
    (void)at;
    tell_deadline(owner);
}

static const rdl_conn_owner conn_owner = {
    .enter = rdl_relay_enter,
    .leave = rdl_relay_leave,
    .ending = rdl_relay_ending,
    .drain = rdl_relay_drain,
    .ready = on_ready,
    .refused = on_refused,
    .reply = on_reply,
    .push = on_push,
    .event = on_event,
    .error = on_error,
    .deadline = on_deadline,
};

/* ------------------------------------------------------------ life */

int rdl_sentinel_init(rdl_sentinel *s, const rdl_sentinel_config *o,
                      const rdl_conn_config *base, const rdl_sentinel_owner *ops, void *owner,
                      rdl_clock *clock, const rdl_rng *rng)
{
    memset(s, 0, sizeof *s);
    s->wake.idx = RDL_HEAP_OUT;
    s->wake.kind = RDL_WAKE_SENTINEL;
    s->answer_by = RDL_NEVER;
    s->ops = ops;
    s->relay = (rdl_relay){&ops->relay, owner};
    s->clock = clock;
    s->command_timeout = base->command_timeout;
    int n = rdl_addr_list_parse(o->addrs, s->addrs, REDLEASE_MAX_SENTINELS);
    if (n < 0) return n == -2 ? REDLEASE_ENOMEM : REDLEASE_EINVAL;
    s->naddrs = n;
    int ok = 1;
    s->name = rdl_strdup(o->master_name, &ok);
    rdl_conn_config cc = *base;
    cc.host = s->addrs[0].host;
    cc.port = s->addrs[0].port;
    cc.unix_path = NULL;
    cc.db = 0;
    cc.username = o->username;
    cc.password = o->password;
    cc.verify_primary = 0;
    cc.probe = 0; /* a Sentinel is asked about the primary, nothing else */
    cc.hold_backoff = 1; /* reset by a usable answer only (answered) */
    rdl_tls_config tls = o->tls && base->tls ? *base->tls : (rdl_tls_config){0};
    tls.server_name = NULL; /* each Sentinel by its own address */
    cc.tls = &tls;
    if (rdl_conn_init(&s->conn, &cc, &conn_owner, s, clock, rng) != REDLEASE_OK) ok = 0;
    return ok ? REDLEASE_OK : REDLEASE_ENOMEM;
}

void rdl_sentinel_free(rdl_sentinel *s)
{
    rdl_conn_free(&s->conn); /* the query and the subscription come back, NULL */
    rdl_addr_list_free(s->addrs, s->naddrs);
    rdl_free(s->name);
    s->naddrs = 0;
    s->name = NULL;
}

int rdl_sentinel_attach(rdl_sentinel *s, rdl_transport_factory make, struct rdl_loop *loop)
{
    return rdl_conn_attach(&s->conn, make, loop);
}

void rdl_sentinel_start(rdl_sentinel *s, int64_t now) { rdl_conn_connect(&s->conn, now); }

void rdl_sentinel_run(rdl_sentinel *s, int64_t now)
{
    if (s->query && now >= s->answer_by) {
        s->answer_by = RDL_NEVER;
        give_up(s, REDLEASE_ETIMEDOUT, "no answer in time");
    }
    rdl_conn_run(&s->conn, now);
    tell_deadline(s);
}

void rdl_sentinel_refresh(rdl_sentinel *s)
{
    /* A question out (it has a deadline), or one to come on the next link,
     * will answer. */
    if (s->query || !rdl_conn_ready(&s->conn)) return;
    s->stay = 1; /* the Sentinel we listen to announced nothing: ask it again */
    rdl_conn_restart(&s->conn, REDLEASE_ECONN, NULL);
}
