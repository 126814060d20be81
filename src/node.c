/* SPDX-License-Identifier: MIT */
/* A node: one connection to one Redis server and what waits on it
 * (src/node.h). What the connection reports comes here first: the node
 * passes replies to the WAITs (src/acks.c) and the locks (src/lock.c),
 * events and failure texts to the client. */
#include "node.h"

#include "client.h"
#include "cluster.h"
#include "lock.h"

static const rdl_conn_owner node_owner; /* below */

int rdl_node_init(rdl_node *n, redlease_client *c, const rdl_conn_config *cc)
{
    n->c = c;
    n->wake.idx = RDL_HEAP_OUT;
    n->wake.kind = RDL_WAKE_NODE;
    rdl_acks_init(&n->acks);
    return rdl_conn_init(&n->conn, cc, &node_owner, n, &c->clock, &c->rng);
}

void rdl_node_free(rdl_node *n)
{
    rdl_conn_free(&n->conn); /* every request comes back now, NULL */
    rdl_acks_fail_all(n);    /* and every ticket for a WAIT: they hold their locks */
    rdl_heap_remove(&n->c->heap, &n->wake);
}

int rdl_node_attach(rdl_node *n)
{
    redlease_client *c = n->c;
    int rc = rdl_heap_insert(&c->heap, &n->wake, RDL_NEVER);
    if (!rc) rc = rdl_conn_attach(&n->conn, c->transport_new, c->loop, c->loop_data);
    if (rc) rdl_heap_remove(&c->heap, &n->wake);
    return rc;
}

void rdl_node_use(rdl_node *n, int64_t now)
{
    if (n->c->loop && rdl_conn_idle(&n->conn)) rdl_conn_connect(&n->conn, now);
}

int rdl_node_ready(const rdl_node *n)
{
    if (n->quorum) return rdl_quorum_ready(n->quorum);
    return rdl_conn_ready(&n->conn) && !n->c->dead;
}

int rdl_node_due(const rdl_node *n)
{
    /* What waited for a connection that broke again before the timer sent
     * it waits for the next one: due now only while the link is ready. */
    return rdl_conn_due(&n->conn) || (n->flush_needed && rdl_node_ready(n));
}

/* Sends what waited for the connection, and re-verifies held leases at once:
 * the server may have restarted and lost them. */
static void flush(rdl_node *n, int64_t now)
{
    redlease_client *c = n->c;
    n->flush_needed = 0;
    for (rdl_list *i = c->locks.next; i != &c->locks; i = i->next) {
        struct redlease_lock *lk = RDL_CONTAINER(i, struct redlease_lock, link);
        if (lk->node == n) rdl_lock_on_ready(lk, now);
    }
    /* Each lock parked here gets one try. One the transport refuses though
     * the connection counts as ready (hiredis out of memory, a context
     * being torn down) is parked again and left to its op deadline:
     * trying until none is parked would never end. A send that fails runs
     * the event hook, which may free the client: its locks go, the next
     * one of the walk among them, so the walk stops there (c itself lives
     * until the outermost entry leaves). Nothing else frees a lock here:
     * callbacks are owed, not run. */
    for (rdl_list *i = c->locks.next; i != &c->locks && !c->dead && c->parked && rdl_node_ready(n);) {
        struct redlease_lock *lk = RDL_CONTAINER(i, struct redlease_lock, link);
        i = i->next;
        if (lk->parked && lk->node == n) rdl_lock_send_waiting(lk, now);
    }
}

void rdl_node_run(rdl_node *n, int64_t now)
{
    if (rdl_conn_due(&n->conn) || n->wake.at <= now) {
        rdl_conn_run(&n->conn, now);
        /* Whatever ran, the node's deadline is now in the future, so the
         * client's timer loop makes progress. */
        int64_t at = rdl_conn_deadline(&n->conn);
        rdl_heap_update(&n->c->heap, &n->wake, at <= now ? RDL_NEVER : at);
    }
    if (n->flush_needed && rdl_node_ready(n)) flush(n, now);
}

/* ------------------------------------- what the connection tells the node */

static void on_enter(void *owner) { rdl_enter(((rdl_node *)owner)->c); }
static void on_leave(void *owner) { rdl_leave(((rdl_node *)owner)->c); }
static int on_ending(void *owner) { return ((rdl_node *)owner)->c->dead; }

static void on_ready(void *owner)
{
    rdl_node *n = owner;
    n->flush_needed = 1; /* sent from the timer, outside hiredis */
    if (n->c->cluster) rdl_cluster_node_ready(n->c);
    if (n->c->quorum) rdl_quorum_member_ready(n->c->quorum, n);
}

/* A refusal retrying cannot cure: what waits for this connection fails now. */
static void on_refused(void *owner, int status, int64_t now)
{
    rdl_node *n = owner;
    rdl_client_refused(n->c, n, status, now);
    /* a quorum member: the quorum's locks, once too many are refused */
    int q = n->c->quorum ? rdl_quorum_refusal(n->c->quorum) : 0;
    if (q) rdl_client_refused(n->c, &n->c->main, q, now);
}

static void reply_to(rdl_node *n, rdl_req *req, const rdl_reply *r)
{
    redlease_client *c = n->c;
    if (req) req->ops->reply(req, r); /* its maker's: a lock's, a WAIT, the router's, a quorum part */
    if (c->closing) c->close_check = 1; /* maybe the last reply it waited for */
}

static void on_reply(void *owner, rdl_req *req, const rdl_reply *r)
{
    rdl_node *n = owner;
    if (req && r) { /* what handles it reads the time its connection read */
        rdl_now_saved saved;
        rdl_now_hint(n->c, n->conn.reply_now, &saved);
        reply_to(n, req, r);
        rdl_now_restore(n->c, &saved);
    } else {
        reply_to(n, req, r);
    }
}

/* Connection events; every one but EV_CONNECTED is about the failure
 * whose text c->errstr holds. */
static void on_event(void *owner, int type, int status, int64_t retry_in)
{
    rdl_node *n = owner;
    redlease_client *c = n->c;
    const char *detail = type != REDLEASE_EV_CONNECTED && c->errstr[0] ? c->errstr : NULL;
    redlease_event ev = {.type = type, .status = status, .rtt_ms = -1, .remaining_ms = -1,
                         .retry_in_ms = retry_in, .detail = detail};
    rdl_emit(c, &ev);
    /* The primary failed us (gone, a replica now, READONLY): it may have
     * moved while we missed the news. Not when we left it on the news. */
    if (type == REDLEASE_EV_DISCONNECTED && c->sentinel && !c->dead) {
        if (n->moving)
            n->moving = 0;
        else
            rdl_sentinel_refresh(c->sentinel);
    }
    /* A quorum member failed: the quorum waits for it no longer. */
    if (type == REDLEASE_EV_DISCONNECTED && c->quorum && n != &c->main && !c->dead)
        rdl_quorum_member_failed(c->quorum, n);
    /* A Cluster node that serves slots (or any, before a map) failed: a
     * failover may have moved its slots. */
    if (type == REDLEASE_EV_DISCONNECTED && c->cluster && !c->dead && (!c->cluster->loaded || n->serves))
        rdl_cluster_want_refresh(c, rdl_now(c));
}

static void on_error(void *owner, const char *text, size_t len)
{
    rdl_set_errstr(((rdl_node *)owner)->c, text, len);
}

static void on_deadline(void *owner, int64_t at)
{
    rdl_node *n = owner;
    if (n->wake.idx != RDL_HEAP_OUT) rdl_heap_update(&n->c->heap, &n->wake, at);
}

static void on_drain(void *owner) { rdl_client_drain(((rdl_node *)owner)->c); }

/* A lock's reply comes soon: fetch its handle while the replies before
 * it are handled. */
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
