/* SPDX-License-Identifier: MIT */
/* The Cluster router: the slot map and redirects (src/cluster.h says what
 * it does and does not do; docs/design.md, section 9, why). */
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "alloc.h"
#include "cluster.h"
#include "node.h"
#include "slot.h"

/* ------------------------------------------------------------- parsing */

static int is_text(const rdl_reply *r)
{
    return r->type == RDL_REPLY_STRING || r->type == RDL_REPLY_STATUS;
}

/* A host a node can be reached at: not "?" (unknown), no NUL, at most
 * 255 bytes; empty means the node that answered. */
static int usable_host(const char *h, size_t len)
{
    return len <= 255 && !(len == 1 && h[0] == '?') && !memchr(h, '\0', len);
}

int rdl_cluster_parse_slots(const rdl_reply *r, rdl_cluster_range_fn fn, void *arg)
{
    if (!r || r->type != RDL_REPLY_ARRAY) return -1;
    for (size_t i = 0; i < r->elements; i++) {
        /* [from, to, [host, port, id, ...], replicas...] */
        const rdl_reply *e = &r->element[i];
        if (e->type != RDL_REPLY_ARRAY || e->elements < 3) return -1;
        const rdl_reply *from = &e->element[0], *to = &e->element[1], *primary = &e->element[2];
        if (from->type != RDL_REPLY_INTEGER || to->type != RDL_REPLY_INTEGER || from->integer < 0 ||
            to->integer < from->integer || to->integer >= RDL_SLOTS)
            return -1;
        if (primary->type != RDL_REPLY_ARRAY || primary->elements < 2 ||
            primary->element[1].type != RDL_REPLY_INTEGER)
            return -1;
        const rdl_reply *host = &primary->element[0];
        if (!is_text(host) && host->type != RDL_REPLY_NIL) return -1;
        /* NIL or empty: the node asked (cluster-preferred-endpoint-type
         * unknown-endpoint); "?": no address known (hostname, none set) */
        const char *h = host->type == RDL_REPLY_NIL ? "" : host->str;
        size_t hlen = host->type == RDL_REPLY_NIL ? 0 : host->len;
        long long port = primary->element[1].integer;
        if (!usable_host(h, hlen) || port < 1 || port > 65535) continue;
        int rc = fn(arg, (unsigned)from->integer, (unsigned)to->integer, h, hlen, (int)port);
        if (rc) return rc;
    }
    return 0;
}

int rdl_cluster_parse_redirect(const rdl_reply *r, int *ask, unsigned *slot, const char **host,
                               size_t *hlen, int *port)
{
    if (!r || r->type != RDL_REPLY_ERROR) return 0;
    const char *p = r->str, *end = r->str + r->len;
    if (r->len > 6 && memcmp(p, "MOVED ", 6) == 0) {
        *ask = 0;
        p += 6;
    } else if (r->len > 4 && memcmp(p, "ASK ", 4) == 0) {
        *ask = 1;
        p += 4;
    } else {
        return 0;
    }
    unsigned s = 0;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9' && p - digits < 6) s = s * 10 + (unsigned)(*p++ - '0');
    if (p == digits || p == end || *p != ' ' || s >= RDL_SLOTS) return 0;
    p++;
    if (p < end && *p == ':') { /* ":port": the node that answered */
        *host = p;
        *hlen = 0;
        *port = rdl_addr_parse_port(p + 1, (size_t)(end - p - 1));
        if (*port < 0) return 0;
    } else if (rdl_addr_parse(p, (size_t)(end - p), host, hlen, port) != 0) {
        return 0;
    }
    *slot = s;
    return 1;
}

/* The host of the node that answered, for an empty one in its answer. */
static void or_answering(const rdl_node *from, const char **host, size_t *hlen)
{
    if (*hlen) return;
    const char *h = from ? rdl_node_host(from) : NULL;
    *host = h ? h : "";
    *hlen = strlen(*host);
}

/* ------------------------------------------------------------ the map */

static const rdl_node_router router_ops; /* below: the redirects */

int rdl_cluster_init(rdl_cluster *cl, rdl_nodes *nodes, rdl_svc *svc, int64_t command_timeout,
                     const rdl_cluster_owner *ops, void *owner)
{
    memset(cl, 0, sizeof *cl);
    cl->nodes = nodes;
    cl->svc = svc;
    cl->command_timeout = command_timeout;
    cl->ops = ops;
    cl->owner = owner;
    cl->wake.idx = RDL_HEAP_OUT;
    cl->wake.kind = RDL_WAKE_CLUSTER;
    cl->refresh_at = 0; /* the first map is wanted at once */
    cl->slots = rdl_calloc(RDL_SLOTS, sizeof *cl->slots);
    if (!cl->slots) return REDLEASE_ENOMEM;
    rdl_nodes_set_router(nodes, &router_ops, cl); /* redirects come here */
    return REDLEASE_OK;
}

void rdl_cluster_free(rdl_cluster *cl)
{
    rdl_free(cl->slots);
    cl->slots = NULL;
}

static void set_wake(rdl_cluster *cl)
{
    int64_t at = cl->query ? cl->answer_by : cl->refresh_at;
    if (cl->wake.idx != RDL_HEAP_OUT) rdl_heap_update(&cl->svc->heap, &cl->wake, at);
}

rdl_node *rdl_cluster_route(rdl_cluster *cl, const char *key, size_t len)
{
    uint16_t i = cl->slots[rdl_key_slot(key, len)];
    return i ? cl->nodes->v[i - 1] : cl->nodes->v[0];
}

void rdl_cluster_want_refresh(rdl_cluster *cl, int64_t now)
{
    /* every answer that was no map doubles the pause, up to 32 times */
    int64_t pause = (int64_t)RDL_CLUSTER_REFRESH_MS << (cl->failures < 5 ? cl->failures : 5);
    int64_t at = cl->last_sent ? cl->last_sent + pause : now;
    if (at < now) at = now;
    if (at < cl->refresh_at) cl->refresh_at = at;
    set_wake(cl);
}

void rdl_cluster_node_ready(rdl_cluster *cl)
{
    /* A refresh that found no node ready waits at refresh_at: due now. */
    set_wake(cl);
}

static const rdl_req_ops query_ops; /* below */

/* The map query: a request that knows its router. */
typedef struct rdl_cluster_query {
    rdl_req req; /* first: freed as the request */
    rdl_cluster *cl;
} rdl_cluster_query;

/* Sends CLUSTER SLOTS to a node that is ready, taking them in turn so a
 * node with a stale view is not the only one asked; none ready: each with
 * an address connects, and the first ready asks (rdl_cluster_node_ready). */
static int ask(rdl_cluster *cl, int64_t now)
{
    int ready = 0;
    for (size_t k = 0; k < cl->nodes->n; k++) {
        rdl_node *n = cl->nodes->v[(cl->next_ask + k) % cl->nodes->n];
        if (!rdl_node_ready(n)) continue;
        ready = 1;
        rdl_cluster_query *cq = rdl_calloc(1, sizeof *cq);
        if (!cq) break;
        cq->cl = cl;
        rdl_req *q = &cq->req;
        q->ops = &query_ops;
        q->kind = RDL_REQ_CLUSTER_SLOTS;
        q->script = -1;
        q->t0 = now;
        q->node = n;
        const char *argv[2] = {"CLUSTER", "SLOTS"};
        const size_t lens[2] = {7, 5};
        if (rdl_node_submit(n, q, 2, argv, lens) != 0) {
            rdl_free(q);
            continue;
        }
        cl->query = q;
        cl->answer_by = now + cl->command_timeout;
        cl->last_sent = now;
        cl->refresh_at = RDL_NEVER;
        cl->next_ask = n->index + 1; /* taken modulo the nodes there are then */
        return 1;
    }
    if (ready) { /* no memory, or every ready link refused it: try again soon */
        cl->refresh_at = now + RDL_CLUSTER_REFRESH_MS;
        return -1;
    }
    for (size_t k = 0; k < cl->nodes->n; k++) rdl_node_use(cl->nodes->v[k], now);
    return 0;
}

void rdl_cluster_run(rdl_cluster *cl, int64_t now)
{
    if (cl->query && now >= cl->answer_by) {
        /* stays on the wire, its answer ignored; the stall rule watches
         * that link */
        rdl_node_note_timeout(cl->query->node, cl->query->t0, now);
        cl->query = NULL;
        cl->failures++;
        rdl_cluster_want_refresh(cl, now); /* paced like any answer that was no map */
    }
    if (!cl->query && now >= cl->refresh_at && ask(cl, now) == 0) {
        /* nobody to ask yet: rdl_cluster_node_ready() wakes us */
        if (cl->wake.idx != RDL_HEAP_OUT) rdl_heap_update(&cl->svc->heap, &cl->wake, RDL_NEVER);
        return;
    }
    set_wake(cl);
}

/* ------------------------------------------------------- the answer */

typedef struct loading {
    rdl_cluster *cl;
    rdl_node *asked;
    uint16_t *slots;
    int ranges; /* with an address */
} loading;

static int load_range(void *arg, unsigned from, unsigned to, const char *host, size_t hlen, int port)
{
    loading *l = arg;
    or_answering(l->asked, &host, &hlen); /* empty: by the address we reached it at */
    if (!hlen) return 0;                   /* a unix socket: no address to give others */
    rdl_node *n = rdl_nodes_at(l->cl->nodes, host, hlen, port);
    if (!n) return REDLEASE_ENOMEM;
    for (unsigned s = from; s <= to; s++) l->slots[s] = (uint16_t)(n->index + 1);
    l->ranges++;
    return 0;
}

/* The map query to node n failed. */
static void failed(rdl_cluster *cl, const rdl_node *n, const char *why, const rdl_reply *r, int64_t now)
{
    char text[200];
    int len = snprintf(text, sizeof text, "CLUSTER SLOTS: %s%.*s", why,
                       r && r->type == RDL_REPLY_ERROR ? (int)(r->len < 150 ? r->len : 150) : 0,
                       r && r->type == RDL_REPLY_ERROR ? r->str : "");
    rdl_svc_set_errstr(cl->svc, rdl_node_name(n), text, len > 0 ? (size_t)len : 0);
    cl->failures++;
    rdl_cluster_want_refresh(cl, now);
}

/* The map gives slots to a node whose link failed and has not come back
 * (not one still making its first connection): a failover may be under
 * way, and the next map may name its replica. */
static int names_a_lost_node(const rdl_cluster *cl)
{
    for (size_t i = 0; i < cl->nodes->n; i++) {
        const rdl_node *n = cl->nodes->v[i];
        if (n->serves && !rdl_node_ready(n) && !rdl_conn_connecting(&n->conn)) return 1;
    }
    return 0;
}

/* The map query came back (r NULL: the link took it). */
static void on_query_reply(rdl_req *req, const rdl_reply *r)
{
    rdl_node *n = req->node;
    rdl_cluster *cl = ((rdl_cluster_query *)req)->cl;
    int current = cl->query == req;
    rdl_free(req);
    if (current) cl->query = NULL;
    if (!current || cl->svc->dead) return;
    int64_t now = rdl_svc_now(cl->svc);
    uint16_t *slots = r ? rdl_calloc(RDL_SLOTS, sizeof *slots) : NULL;
    loading l = {cl, n, slots, 0};
    int rc = !r ? -1 : !slots ? REDLEASE_ENOMEM : rdl_cluster_parse_slots(r, load_range, &l);
    if (rc || !l.ranges) {
        /* no map at all (a node not in a cluster yet answers an empty
         * one): the one we have stays, and we ask again */
        rdl_free(slots);
        failed(cl, n,
               !r                      ? "no answer"
               : rc == REDLEASE_ENOMEM ? "out of memory"
               : rc && r->type == RDL_REPLY_ERROR ? ""
               : rc                    ? "an answer of another shape"
                                       : "no slot with a usable address",
               r, now);
        return;
    }
    rdl_free(cl->slots);
    cl->slots = slots;
    cl->loaded = 1;
    for (size_t i = 0; i < cl->nodes->n; i++) cl->nodes->v[i]->serves = 0;
    for (size_t s = 0; s < RDL_SLOTS; s++)
        if (slots[s]) cl->nodes->v[slots[s] - 1]->serves++;
    cl->failures = 0;
    cl->ops->remap(cl->owner, now); /* every lock goes where the new map says */
    if (names_a_lost_node(cl)) {
        int64_t at = now + ((int64_t)RDL_CLUSTER_REFRESH_MS
                            << (cl->stale < RDL_CLUSTER_STALE_DOUBLINGS ? cl->stale : RDL_CLUSTER_STALE_DOUBLINGS));
        cl->stale++;
        if (at < cl->refresh_at) cl->refresh_at = at;
    } else {
        cl->stale = 0;
    }
    set_wake(cl);
}

static const rdl_req_ops query_ops = {.reply = on_query_reply};

/* ---------------------------------------------------- the redirects */

/* A request's command came back from node from redirected: the node to
 * send it to (MOVED has corrected the map, and a refresh is wanted), or
 * NULL when r is no redirect, names no usable address ("?"), or the node
 * cannot be made. *ask: only this command goes there. */
static rdl_node *redirected(rdl_cluster *cl, const rdl_node *from, const rdl_reply *r, int *ask,
                            int64_t now)
{
    unsigned slot;
    const char *host;
    size_t hlen;
    int port;
    if (!rdl_cluster_parse_redirect(r, ask, &slot, &host, &hlen, &port)) return NULL;
    or_answering(from, &host, &hlen);
    if (!hlen || !usable_host(host, hlen)) return NULL; /* nowhere to go: transient */
    rdl_node *n = rdl_nodes_at(cl->nodes, host, hlen, port);
    if (!n) return NULL;
    if (!*ask) {
        cl->slots[slot] = (uint16_t)(n->index + 1);
        rdl_cluster_want_refresh(cl, now); /* one slot moved: others may have too */
    }
    return n;
}

/* A reply on one of the router's nodes: MOVED or ASK for a request that
 * can go elsewhere (its handler has follow) sends it on to the node named,
 * the same request, so its send time still counts; ready, that node gets
 * it at once (behind ASKING for an ASK), else its handler waits for the
 * node and sends afresh from there. What the handler hears is the final
 * answer, or the redirect itself as a failure: one past RDL_MAX_REDIRECTS,
 * to nowhere usable, or of a request nobody waits for (it did nothing; a
 * MOVED still corrects the map). */
static int on_node_reply(void *arg, rdl_node *from, rdl_req *req, const rdl_reply *r)
{
    rdl_cluster *cl = arg;
    const rdl_req_ops *ops = req->ops;
    if (r->type != RDL_REPLY_ERROR || !ops || !ops->follow || cl->svc->dead) return 0;
    int64_t now = rdl_svc_now(cl->svc);
    int ask;
    rdl_node *to = redirected(cl, from, r, &ask, now);
    if (!to || req->redirects >= RDL_MAX_REDIRECTS || !ops->follow(req, to, ask, now)) return 0;
    if (rdl_node_ready(to)) {
        req->node = to;
        req->epoch = rdl_node_epoch(to);
        req->asking = ask;
        req->redirects++;
        if (ops->resend(req) == 0) return 1;
    }
    return ops->unsent(req, to, ask, now);
}

static const rdl_node_router router_ops = {.reply = on_node_reply};
