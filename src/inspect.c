/* SPDX-License-Identifier: MIT */
/* Inspections in flight (src/inspect.h says what this layer does; what
 * an answer means is src/inspect_view.c's).
 *
 * An inspection (rdl_inspect_op) holds one part per server asked, a
 * request of its own, and the keys its command names. It is decided once
 * every part has settled (answered, failed, or silent at the deadline),
 * its callback is then owed and runs from the client's timer, and it is
 * freed once delivered and every part is back from the wire: a part's
 * request lives until its transport reports it, so a late answer is
 * recognised and dropped. */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "errors.h"
#include "inspect.h"
#include "keys.h"
#include "node.h"
#include "scripts.h"

#define INSPECT_KEYS 6

/* Where a part is. */
enum { PART_IDLE, PART_PARKED, PART_OUT, PART_BACK };

struct rdl_inspect_op;

typedef struct rdl_inspect_part {
    rdl_req req; /* first: the request its node carries */
    struct rdl_inspect_op *op;
    redlease_inspection view; /* what its server answered (has_view) */
    int status;               /* its failure, once settled without a view */
    uint8_t state;            /* PART_* */
    uint8_t settled;          /* answered, failed, or silent past the deadline */
    uint8_t has_view;
} rdl_inspect_part;

typedef struct rdl_inspect_op {
    rdl_list link; /* the set's pending, owed or spent */
    rdl_inspects *set;
    redlease_inspect_cb cb;
    void *arg;
    rdl_heap_node wake; /* the deadline (RDL_WAKE_INSPECT) */
    int decided, delivered;
    int status;
    int out; /* parts on the wire */
    size_t n;
    redlease_inspection result; /* what the callback reads */
    const char *keys[INSPECT_KEYS];
    size_t lens[INSPECT_KEYS];
    rdl_inspect_part part[]; /* n of them; the keys' bytes follow */
} rdl_inspect_op;

static const rdl_req_ops part_ops; /* below */

void rdl_inspects_init(rdl_inspects *s, rdl_svc *svc, int64_t command_timeout,
                       const rdl_inspect_owner *ops, void *owner)
{
    s->svc = svc;
    s->command_timeout = command_timeout;
    s->ops = ops;
    s->owner = owner;
    rdl_list_init(&s->pending);
    rdl_list_init(&s->owed);
    rdl_list_init(&s->spent);
}

static void op_free(rdl_inspect_op *op)
{
    rdl_list_remove(&op->link);
    for (size_t i = 0; i < op->n; i++) rdl_inspect_clear(&op->part[i].view);
    rdl_inspect_clear(&op->result);
    rdl_free(op);
}

/* Delivered, and nothing of it on the wire: gone. */
static void maybe_free(rdl_inspect_op *op)
{
    if (op->delivered && op->out == 0) op_free(op);
}

static void free_list(rdl_inspects *s, rdl_list *l)
{
    while (!rdl_list_empty(l)) {
        rdl_inspect_op *op = RDL_CONTAINER(l->next, rdl_inspect_op, link);
        if (op->wake.idx != RDL_HEAP_OUT) rdl_heap_remove(&s->svc->heap, &op->wake);
        op_free(op);
    }
}

void rdl_inspects_free(rdl_inspects *s)
{
    if (!s->pending.next) return; /* never initialised */
    free_list(s, &s->pending);
    free_list(s, &s->owed);
    free_list(s, &s->spent);
}

/* ------------------------------------------------------------ sending */

/* The part's command on its node as it stands: EVALSHA, or EVAL once
 * that server said NOSCRIPT; behind ASKING after an ASK (req.asking). */
static int send_part(rdl_inspect_part *pt)
{
    rdl_inspect_op *op = pt->op;
    int eval = pt->req.sent_eval;
    const char *argv[3 + INSPECT_KEYS] = {eval ? "EVAL" : "EVALSHA",
                                          eval ? rdl_script_src[RDL_SCRIPT_INSPECT]
                                               : rdl_script_sha(RDL_SCRIPT_INSPECT),
                                          "6"};
    size_t lens[3 + INSPECT_KEYS] = {eval ? 4 : 7, strlen(argv[1]), 1};
    for (int k = 0; k < INSPECT_KEYS; k++) {
        argv[3 + k] = op->keys[k];
        lens[3 + k] = op->lens[k];
    }
    return rdl_node_submit(pt->req.node, &pt->req, 3 + INSPECT_KEYS, argv, lens);
}

static void decide(rdl_inspect_op *op, int64_t now);

static int all_settled(const rdl_inspect_op *op)
{
    for (size_t i = 0; i < op->n; i++)
        if (!op->part[i].settled) return 0;
    return 1;
}

/* The part ends without an answer to read. */
static void settle_failed(rdl_inspect_part *pt, int status)
{
    pt->settled = 1;
    pt->status = status;
}

/* Sends the part now if its node is ready, else waits for the node
 * (rdl_inspect_node_ready), which starts connecting if it never did,
 * unless told not to wait; a node refused for good fails it at once. */
static void go(rdl_inspect_part *pt, int wait, int64_t now)
{
    rdl_node *n = pt->req.node;
    if (rdl_node_ready(n) && rdl_node_scripts_off(n)) { /* the read is a script (man 3, WITHOUT SCRIPTS) */
        char text[320];
        int len = snprintf(text, sizeof text, "an inspection needs Lua scripts, and the server refuses them (%s)",
                           rdl_node_scripts_why(n));
        rdl_svc_set_errstr(pt->op->set->svc, rdl_node_name(n), text, len > 0 ? (size_t)len : 0);
        pt->state = PART_BACK;
        settle_failed(pt, REDLEASE_ENOTSUP);
        return;
    }
    if (rdl_node_ready(n)) {
        pt->req.t0 = now;
        pt->req.epoch = rdl_node_epoch(n);
        int rc = send_part(pt);
        if (rc == 0) {
            pt->state = PART_OUT;
            pt->op->out++;
            return;
        }
        pt->state = PART_BACK;
        settle_failed(pt, rc);
        return;
    }
    int refused = rdl_node_refusal(n);
    if (refused || !wait) {
        int st = rdl_node_status(n);
        pt->state = PART_BACK;
        settle_failed(pt, refused ? refused : st ? st : REDLEASE_ECONN);
        return;
    }
    pt->state = PART_PARKED;
    rdl_node_use(n, now);
}

int rdl_inspect_start(rdl_inspects *s, const char *prefix, size_t plen, const char *resource,
                      size_t rlen, rdl_node *const *nodes, size_t n, int wait,
                      redlease_inspect_cb cb, void *arg)
{
    static const int kinds[INSPECT_KEYS] = {REDLEASE_KEY_LOCK,    REDLEASE_KEY_FENCE,
                                            REDLEASE_KEY_HOLDERS, REDLEASE_KEY_WEIGHTS,
                                            REDLEASE_KEY_QUEUE,   REDLEASE_KEY_WAITERS};
    size_t bytes = 0;
    for (int k = 0; k < INSPECT_KEYS; k++) bytes += rdl_key_len(plen, resource, rlen, kinds[k]);
    rdl_inspect_op *op = rdl_calloc(1, sizeof *op + n * sizeof op->part[0] + bytes);
    if (!op) return REDLEASE_ENOMEM;
    int64_t now = rdl_svc_now(s->svc);
    op->wake.kind = RDL_WAKE_INSPECT;
    op->wake.idx = RDL_HEAP_OUT;
    if (rdl_heap_insert(&s->svc->heap, &op->wake, now + s->command_timeout) != 0) {
        rdl_free(op);
        return REDLEASE_ENOMEM;
    }
    op->set = s;
    op->cb = cb;
    op->arg = arg;
    op->n = n;
    char *p = (char *)&op->part[n];
    for (int k = 0; k < INSPECT_KEYS; k++) {
        op->lens[k] = rdl_key_len(plen, resource, rlen, kinds[k]);
        rdl_key_write(p, prefix, plen, resource, rlen, kinds[k]);
        op->keys[k] = p;
        p += op->lens[k];
    }
    rdl_list_push_back(&s->pending, &op->link);
    for (size_t i = 0; i < n; i++) {
        rdl_inspect_part *pt = &op->part[i];
        pt->op = op;
        pt->req.ops = &part_ops;
        pt->req.kind = RDL_REQ_INSPECT;
        pt->req.script = RDL_SCRIPT_INSPECT;
        pt->req.node = nodes[i];
    }
    for (size_t i = 0; i < n; i++) go(&op->part[i], wait, now);
    /* every part failed at once: owed now, delivered from the timer */
    if (all_settled(op)) decide(op, now);
    return REDLEASE_OK;
}

void rdl_inspect_node_ready(rdl_inspects *s, rdl_node *n, int64_t now)
{
    for (rdl_list *l = s->pending.next; l != &s->pending;) {
        rdl_inspect_op *op = RDL_CONTAINER(l, rdl_inspect_op, link);
        l = l->next; /* decide() moves op to owed */
        int went = 0;
        for (size_t i = 0; i < op->n; i++) {
            rdl_inspect_part *pt = &op->part[i];
            if (pt->state == PART_PARKED && pt->req.node == n) go(pt, 1, now), went = 1;
        }
        if (went && all_settled(op)) decide(op, now);
    }
}

uint64_t rdl_inspect_out_on(const rdl_inspects *s, const rdl_node *n)
{
    const rdl_list *lists[3] = {&s->pending, &s->owed, &s->spent};
    uint64_t out = 0;
    for (int k = 0; k < 3; k++)
        for (const rdl_list *l = lists[k]->next; l != lists[k]; l = l->next) {
            const rdl_inspect_op *op = RDL_CONTAINER(l, rdl_inspect_op, link);
            for (size_t i = 0; i < op->n; i++)
                out += op->part[i].state == PART_OUT && op->part[i].req.node == n;
        }
    return out;
}

/* ------------------------------------------------------------ deciding */

/* The op's outcome from what its parts settled with: the tally of the
 * views (one server's is its own), or with none at all the first
 * failure. Its callback is owed from here. */
static void decide(rdl_inspect_op *op, int64_t now)
{
    rdl_inspects *s = op->set;
    (void)now;
    op->decided = 1;
    if (op->wake.idx != RDL_HEAP_OUT) rdl_heap_remove(&s->svc->heap, &op->wake);
    redlease_inspection *views[REDLEASE_MAX_QUORUM];
    int answered = 0, first = 0;
    for (size_t i = 0; i < op->n; i++) {
        rdl_inspect_part *pt = &op->part[i];
        if (pt->state == PART_PARKED) pt->state = PART_BACK; /* waits for its node no more */
        views[i] = pt->has_view ? &pt->view : NULL;
        answered += pt->has_view;
        if (!pt->has_view && !first) first = pt->status ? pt->status : REDLEASE_ECONN;
    }
    int cannot_tell = 0;
    if (!answered) {
        op->status = first;
    } else if (rdl_inspect_tally(&op->result, views, (int)op->n, &cannot_tell) != 0) {
        op->status = REDLEASE_ENOMEM;
        rdl_inspect_clear(&op->result);
    } else {
        op->status = cannot_tell ? REDLEASE_EQUORUM : REDLEASE_OK;
        if (cannot_tell) {
            char text[120];
            int len = snprintf(text, sizeof text,
                               "QUORUM cannot tell: %d of %zu servers answered, a majority is %zu",
                               answered, op->n, op->n / 2 + 1);
            rdl_svc_set_errstr(s->svc, NULL, text, len > 0 ? (size_t)len : 0);
        }
        redlease_inspection *v = &op->result;
        for (size_t i = 0; i < v->nholders; i++) {
            int64_t permits;
            v->holders[i].pub.this_client = s->ops->mine(s->owner, v->holders[i].token, &permits);
        }
        for (size_t i = 0; i < v->nwaiters; i++) {
            rdl_inspect_waiter *w = &v->waiters[i];
            int64_t permits = 0;
            w->pub.this_client = s->ops->mine(s->owner, w->token, &permits);
            if (w->pub.this_client && w->pub.kind == REDLEASE_KIND_SEMAPHORE) w->pub.permits = permits;
        }
        rdl_inspect_finish(v);
    }
    for (size_t i = 0; i < op->n; i++) rdl_inspect_clear(&op->part[i].view);
    rdl_list_remove(&op->link);
    rdl_list_push_back(&s->owed, &op->link);
}

void rdl_inspect_expire(rdl_inspects *s, rdl_heap_node *wake, int64_t now)
{
    rdl_inspect_op *op = RDL_CONTAINER(wake, rdl_inspect_op, wake);
    (void)s;
    for (size_t i = 0; i < op->n; i++) {
        rdl_inspect_part *pt = &op->part[i];
        if (pt->settled) continue;
        if (pt->state == PART_OUT) {
            /* it stays on the wire, its answer ignored; the stall rule
             * watches that link */
            rdl_node_note_timeout(pt->req.node, pt->req.t0, now);
            settle_failed(pt, REDLEASE_ETIMEDOUT);
        } else { /* its node never became ready */
            int st = rdl_node_status(pt->req.node);
            settle_failed(pt, st ? st : REDLEASE_ECONN);
        }
    }
    decide(op, now);
}

void rdl_inspect_deliver(rdl_inspects *s)
{
    rdl_inspect_op *op = RDL_CONTAINER(s->owed.next, rdl_inspect_op, link);
    rdl_list_remove(&op->link);
    rdl_list_push_back(&s->spent, &op->link);
    op->delivered = 1;
    int st = op->status;
    /* the callback may call anything, free the client too: op lives
     * until its parts are back (the client's teardown frees the rest) */
    op->cb(st == REDLEASE_OK || st == REDLEASE_EQUORUM ? &op->result : NULL, st, op->arg);
    rdl_inspect_clear(&op->result);
    maybe_free(op);
}

void rdl_inspect_cancel_all(rdl_inspects *s, int now)
{
    int64_t t = rdl_svc_now(s->svc);
    while (!rdl_list_empty(&s->pending)) {
        rdl_inspect_op *op = RDL_CONTAINER(s->pending.next, rdl_inspect_op, link);
        for (size_t i = 0; i < op->n; i++) {
            rdl_inspect_part *pt = &op->part[i];
            pt->has_view = 0;
            if (!pt->settled) settle_failed(pt, REDLEASE_ECANCELED);
            pt->status = REDLEASE_ECANCELED;
        }
        decide(op, t);
    }
    while (now && !rdl_list_empty(&s->owed)) rdl_inspect_deliver(s);
}

/* ------------------------------------------------------------ answers */

/* A part came back (r NULL: its link took it). */
static void on_part_reply(rdl_req *req, const rdl_reply *r)
{
    rdl_inspect_part *pt = (rdl_inspect_part *)req;
    rdl_inspect_op *op = pt->op;
    rdl_inspects *s = op->set;
    pt->state = PART_BACK;
    op->out--;
    if (s->svc->dead || op->decided || pt->settled) {
        maybe_free(op);
        return;
    }
    int64_t now = rdl_svc_now(s->svc);
    rdl_error_class e = {0};
    if (r && r->type == RDL_REPLY_ERROR) e = rdl_error_classify(r->str, r->len);
    if (e.noscript && !req->sent_eval) {
        /* that server's script cache lacks it: EVAL fills it */
        req->sent_eval = 1;
        if (send_part(pt) == 0) {
            pt->state = PART_OUT;
            op->out++;
            return;
        }
        r = NULL;
    }
    if (!r) {
        settle_failed(pt, REDLEASE_ECONN);
    } else if (r->type == RDL_REPLY_ERROR) {
        rdl_svc_set_errstr(s->svc, rdl_node_name(req->node), r->str, r->len);
        settle_failed(pt, e.status);
    } else {
        int rc = rdl_inspect_parse(r, &pt->view);
        if (rc) {
            rdl_inspect_clear(&pt->view);
            if (rc == REDLEASE_EPROTO) {
                static const char odd[] = "inspect: an answer of another shape";
                rdl_svc_set_errstr(s->svc, rdl_node_name(req->node), odd, sizeof odd - 1);
            }
            settle_failed(pt, rc);
        } else {
            pt->settled = pt->has_view = 1;
        }
    }
    if (all_settled(op)) decide(op, now);
}

/* The Cluster router follows a redirect (src/cluster.c): wanted while
 * the inspection is not decided. */
static int on_follow(rdl_req *req, rdl_node *to, int ask, int64_t now)
{
    (void)to, (void)ask, (void)now;
    rdl_inspect_part *pt = (rdl_inspect_part *)req;
    return !pt->op->decided && !pt->settled;
}

static int on_resend(rdl_req *req) { return send_part((rdl_inspect_part *)req); }

/* The node the redirect names is not ready (or refused the send): the
 * part waits for it (behind ASKING for an ASK), within the deadline. */
static int on_unsent(rdl_req *req, rdl_node *to, int ask, int64_t now)
{
    rdl_inspect_part *pt = (rdl_inspect_part *)req;
    rdl_inspect_op *op = pt->op;
    if (op->decided || pt->settled) return 0; /* the redirect is its reply: dropped */
    req->node = to;
    req->asking = (uint8_t)ask;
    req->redirects++;
    pt->state = PART_PARKED;
    op->out--;
    rdl_node_use(to, now);
    return 1;
}

static const rdl_req_ops part_ops = {
    .reply = on_part_reply,
    .follow = on_follow,
    .resend = on_resend,
    .unsent = on_unsent,
};
