/* SPDX-License-Identifier: MIT */
/* One WAIT (and one WAITAOF) in flight per connection, shared by every
 * write before it (src/acks.h says why). */
#include <stdio.h>
#include <string.h>

#include "acks.h"
#include "alloc.h"

void rdl_acks_init(rdl_acks *a, rdl_conn *conn, rdl_svc *svc)
{
    a->conn = conn;
    a->svc = svc;
    for (int k = 0; k < 2; k++) {
        rdl_list_init(&a->queued[k]);
        rdl_list_init(&a->covered[k]);
        a->out[k] = NULL;
    }
}

/* Every ticket of list gets r, in order; the list is emptied first, so a
 * lock that hands in a new ticket meanwhile joins the next WAIT. */
static void answer_all(rdl_list *list, const rdl_reply *r)
{
    rdl_list batch;
    rdl_list_init(&batch);
    rdl_list_move_all(&batch, list);
    while (!rdl_list_empty(&batch)) {
        rdl_ack_ticket *t = RDL_CONTAINER(batch.next, rdl_ack_ticket, link);
        rdl_list_remove(&t->link);
        t->req.ops->reply(&t->req, r);
    }
}

static const rdl_req_ops wait_ops; /* below */

/* Sends the WAIT (k 1: WAITAOF) for the tickets queued, if any and none is
 * in flight. Tickets from a connection that is gone get NULL: a WAIT on
 * another one would count nothing of theirs. */
/* The WAIT in flight: a request that knows whose it is. */
typedef struct rdl_wait_req {
    rdl_req req; /* first: freed as the request */
    rdl_acks *acks;
} rdl_wait_req;

/* The connection takes commands (and its client is not ending). */
static int ready(const rdl_acks *a) { return rdl_conn_ready(a->conn) && !a->svc->dead; }

static void send_next(rdl_acks *a, int k)
{
    if (a->out[k] || rdl_list_empty(&a->queued[k])) return;
    uint64_t epoch = rdl_conn_epoch(a->conn);
    int n = 0;
    int64_t ms = 0;
    for (rdl_list *i = a->queued[k].next; i != &a->queued[k];) {
        rdl_ack_ticket *t = RDL_CONTAINER(i, rdl_ack_ticket, link);
        i = i->next;
        if (!ready(a) || t->req.epoch != epoch) {
            rdl_list_remove(&t->link);
            t->req.ops->reply(&t->req, NULL);
            continue;
        }
        if (t->min_replicas > n) n = t->min_replicas;
        if (!ms || t->timeout < ms) ms = t->timeout;
    }
    if (rdl_list_empty(&a->queued[k])) return;
    rdl_wait_req *wr = rdl_calloc(1, sizeof *wr);
    rdl_req *w = wr ? &wr->req : NULL;
    /* WAIT numreplicas timeout, or WAITAOF numlocal numreplicas timeout */
    char replicas[16], timeout[24];
    snprintf(replicas, sizeof replicas, "%d", n);
    snprintf(timeout, sizeof timeout, "%lld", (long long)ms);
    const char *argv[4] = {"WAIT", replicas, timeout};
    if (k) argv[0] = "WAITAOF", argv[1] = "1", argv[2] = replicas, argv[3] = timeout;
    int argc = k ? 4 : 3;
    size_t lens[4];
    for (int i = 0; i < argc; i++) lens[i] = strlen(argv[i]);
    if (w) {
        wr->acks = a;
        w->ops = &wait_ops;
        w->kind = RDL_REQ_ACK;
        w->script = -1;
        w->t0 = rdl_svc_now(a->svc);
        w->epoch = epoch;
    }
    if (!w || rdl_conn_submit(a->conn, w, argc, argv, lens) != 0) {
        rdl_free(w);
        answer_all(&a->queued[k], NULL); /* as a link that broke */
        return;
    }
    a->out[k] = w;
    rdl_list_move_all(&a->covered[k], &a->queued[k]);
}

void rdl_acks_add(rdl_acks *a, rdl_ack_ticket *ticket)
{
    int k = ticket->fsync;
    rdl_list_push_back(&a->queued[k], &ticket->link);
    send_next(a, k);
}

/* A WAIT came back (r NULL: the link took it): its answer goes to every
 * ticket it covered, then the next WAIT covers those queued meanwhile. */
static void on_wait_reply(rdl_req *req, const rdl_reply *r)
{
    rdl_acks *a = ((rdl_wait_req *)req)->acks;
    int k = req == a->out[1];
    int current = req == a->out[k]; /* (always: one WAIT of a kind is out at a time) */
    rdl_free(req);
    if (!current) return;
    a->out[k] = NULL;
    answer_all(&a->covered[k], r);
    send_next(a, k); /* after a broken link, it fails those queued */
}

static const rdl_req_ops wait_ops = {.reply = on_wait_reply};

void rdl_acks_fail_all(rdl_acks *a)
{
    for (int k = 0; k < 2; k++) {
        answer_all(&a->covered[k], NULL);
        answer_all(&a->queued[k], NULL);
    }
}
