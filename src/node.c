/* SPDX-License-Identifier: MIT */
/* A node: one connection to one Redis server and what waits on it
 * (src/node.h). What the connection reports comes here first: replies go
 * back through each request's own ops (the locks', the WAITs', the
 * router's, a quorum's parts), events and failure texts to the services,
 * and the rest to the node's owner through the table it registered. */
#include "node.h"

#include "alloc.h"

static const rdl_conn_owner node_owner; /* below */

int rdl_node_init(rdl_node *n, rdl_svc *svc, const rdl_node_owner *ops, void *owner,
                  const rdl_conn_config *cc)
{
    n->svc = svc;
    n->owner_ops = ops;
    n->owner = owner;
    n->wake.idx = RDL_HEAP_OUT;
    n->wake.kind = RDL_WAKE_NODE;
    rdl_acks_init(&n->acks, &n->conn, svc);
    return rdl_conn_init(&n->conn, cc, &node_owner, n, &svc->clock, &svc->rng);
}

void rdl_node_set_via(rdl_node *n, const rdl_node_via *via, void *arg)
{
    n->via = via;
    n->via_arg = arg;
}

void rdl_node_free(rdl_node *n)
{
    rdl_conn_free(&n->conn); /* every request comes back now, NULL */
    rdl_acks_fail_all(&n->acks); /* and every ticket for a WAIT: they hold their locks */
    rdl_heap_remove(&n->svc->heap, &n->wake);
}

int rdl_node_attach(rdl_node *n)
{
    rdl_svc *s = n->svc;
    int rc = rdl_heap_insert(&s->heap, &n->wake, RDL_NEVER);
    if (!rc) rc = rdl_conn_attach(&n->conn, s->transport_new, &s->loop);
    if (rc) rdl_heap_remove(&s->heap, &n->wake);
    return rc;
}

void rdl_node_use(rdl_node *n, int64_t now)
{
    if (n->svc->loop.ops && rdl_conn_idle(&n->conn)) rdl_conn_connect(&n->conn, now);
}

int rdl_node_ready(const rdl_node *n)
{
    if (n->via) return n->via->ready(n->via_arg);
    return rdl_conn_ready(&n->conn) && !n->svc->dead;
}

int rdl_node_due(const rdl_node *n)
{
    /* What waited for a connection that broke again before the timer sent
     * it waits for the next one: due now only while the link is ready. */
    return rdl_conn_due(&n->conn) || (n->flush_needed && rdl_node_ready(n));
}

void rdl_node_run(rdl_node *n, int64_t now)
{
    if (rdl_conn_due(&n->conn) || n->wake.at <= now) {
        rdl_conn_run(&n->conn, now);
        /* Whatever ran, the node's deadline is now in the future, so the
         * client's timer loop makes progress. */
        int64_t at = rdl_conn_deadline(&n->conn);
        rdl_heap_update(&n->svc->heap, &n->wake, at <= now ? RDL_NEVER : at);
    }
    if (n->flush_needed && rdl_node_ready(n)) {
        n->flush_needed = 0;
        n->owner_ops->flush(n->owner, n, now);
    }
}

/* ASKING's answer: the command behind it tells. */
static void on_asking_reply(rdl_req *req, const rdl_reply *r)
{
    (void)r;
    rdl_free(req);
}

static const rdl_req_ops asking_ops = {.reply = on_asking_reply};

int rdl_node_submit_asking(rdl_node *n, rdl_req *req, int argc, const char **argv,
                           const size_t *lens)
{
    rdl_req *a = rdl_calloc(1, sizeof *a);
    if (!a) return REDLEASE_ENOMEM;
    a->ops = &asking_ops;
    a->kind = RDL_REQ_ASKING;
    a->script = -1;
    a->t0 = rdl_svc_now(n->svc); /* (the clock is read only here: a read costs) */
    a->node = n;
    const char *asking[1] = {"ASKING"};
    const size_t len[1] = {6};
    int rc = rdl_conn_submit(&n->conn, a, 1, asking, len);
    if (rc) {
        rdl_free(a);
        return rc;
    }
    rc = rdl_conn_submit(&n->conn, req, argc, argv, lens);
    if (rc) rdl_node_restart(n, REDLEASE_ECONN, "ASKING sent without its command");
    return rc;
}

/* ------------------------------------- what the connection tells the node */

static void on_enter(void *owner) { rdl_svc_enter(((rdl_node *)owner)->svc); }
static void on_leave(void *owner) { rdl_svc_leave(((rdl_node *)owner)->svc); }
static int on_ending(void *owner) { return ((rdl_node *)owner)->svc->dead; }

static void on_ready(void *owner)
{
    rdl_node *n = owner;
    n->flush_needed = 1; /* sent from the timer, outside hiredis */
    n->owner_ops->ready(n->owner, n);
}

/* A refusal retrying cannot cure: what waits for this connection fails now. */
static void on_refused(void *owner, int status, int64_t now)
{
    rdl_node *n = owner;
    n->owner_ops->refused(n->owner, n, status, now);
}

static void on_reply(void *owner, rdl_req *req, const rdl_reply *r)
{
    rdl_node *n = owner;
    if (req && r) { /* what handles it reads the time its connection read */
        rdl_now_saved saved;
        rdl_svc_hint(n->svc, n->conn.reply_now, &saved);
        if (!n->router || !n->router->reply(n->router_arg, n, req, r)) req->ops->reply(req, r);
        rdl_svc_restore(n->svc, &saved);
    } else if (req) {
        req->ops->reply(req, r); /* its maker's: a lock's, a WAIT, the router's, a quorum part */
    }
    n->owner_ops->replied(n->owner);
}

/* Connection events, each naming its server; every one but EV_CONNECTED
 * is about the failure whose text the services' errstr holds. */
static void on_event(void *owner, int type, int status, int64_t retry_in)
{
    rdl_node *n = owner;
    rdl_svc *s = n->svc;
    const char *detail = type != REDLEASE_EV_CONNECTED && s->errstr[0] ? s->errstr : NULL;
    redlease_event ev = {.type = type, .status = status, .rtt_ms = -1, .remaining_ms = -1,
                         .retry_in_ms = retry_in, .detail = detail, .node = rdl_conn_name(&n->conn)};
    rdl_svc_emit(s, &ev);
    if (type == REDLEASE_EV_DISCONNECTED && !s->dead) n->owner_ops->lost(n->owner, n);
}

/* Every failure of the connection (the transport's, Redis's answer to the
 * handshake, ours: timeouts, drops) is named for its server here. */
static void on_error(void *owner, const char *text, size_t len)
{
    rdl_node *n = owner;
    rdl_svc_set_errstr(n->svc, rdl_conn_name(&n->conn), text, len);
}

static void on_deadline(void *owner, int64_t at)
{
    rdl_node *n = owner;
    if (n->wake.idx != RDL_HEAP_OUT) rdl_heap_update(&n->svc->heap, &n->wake, at);
}

static void on_drain(void *owner)
{
    rdl_node *n = owner;
    n->owner_ops->drain(n->owner);
}

/* A request's reply comes soon: its handler may fetch what it will touch
 * while the replies before it are handled. */
static void on_prefetch(void *owner, void *p)
{
    const rdl_req *req = p;
    (void)owner;
    if (req->ops && req->ops->prefetch) req->ops->prefetch(req); /* no ops: the connection's own */
}

static const rdl_conn_owner node_owner = {
    .enter = on_enter,
    .leave = on_leave,
    .ending = on_ending,
    .ready = on_ready,
    .refused = on_refused,
    .reply = on_reply,
    .event = on_event,
    .error = on_error,
    .deadline = on_deadline,
    .drain = on_drain,
    .prefetch = on_prefetch,
};
