/* SPDX-License-Identifier: MIT */
/* Replication acknowledgement, one WAIT at a time (src/acks.c).
 *
 * Redis runs a connection's commands in order, and a WAIT blocks the
 * connection until its replicas answer or its timeout passes: every
 * command behind it waits too. So a node keeps at most one WAIT (and one
 * WAITAOF) in flight on its connection. A lock whose write needs an
 * acknowledgement hands in a ticket (an rdl_ack_ticket, of kind RDL_REQ_ACK, with
 * the write's send time, epoch and fence, never sent itself); the next
 * WAIT covers every ticket handed in before it, since WAIT counts the
 * replicas that have all of this connection's writes so far. Its answer
 * goes to each ticket's lock as that ticket's reply (its req.ops),
 * then the next WAIT covers the tickets that came meanwhile.
 *
 * One WAIT for several writes asks for the most replicas any of them
 * wants, and waits the shortest of their timeouts; each lock judges the
 * count by its own min_replicas. A write waits at most for the WAIT in
 * flight and then its own: 2 x replica_timeout_ms, which is why that
 * must stay below half the command timeout.
 */
#ifndef REDLEASE_ACKS_H
#define REDLEASE_ACKS_H

#include "conn.h"
#include "list.h"
#include "req.h"
#include "svc.h"
#include "transport.h"

typedef struct rdl_acks {
    rdl_conn *conn;      /* the connection the WAITs go on (its node's) */
    rdl_svc *svc;
    rdl_list queued[2];  /* tickets for the next WAIT; [1]: WAITAOF */
    rdl_list covered[2]; /* tickets the WAIT in flight answers */
    rdl_req *out[2];     /* the WAIT in flight, or NULL */
} rdl_acks;

/* The WAITs of conn (a node's). */
void rdl_acks_init(rdl_acks *a, rdl_conn *conn, rdl_svc *svc);
/* A lock's ticket (lock_send.c), on the acks of the node its write went out on;
 * the WAIT's answer (or NULL, a link that broke) comes back through
 * ticket->req.ops. */
void rdl_acks_add(rdl_acks *a, rdl_ack_ticket *ticket);
/* The connection ends: every ticket not yet answered gets NULL. */
void rdl_acks_fail_all(rdl_acks *a);

#endif
