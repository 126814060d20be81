/* SPDX-License-Identifier: MIT */
/* Sentinel (src/sentinel.c): where the primary of a master name is, from a
 * set of Sentinels, and news of every failover at once.
 *
 * It keeps one connection (an rdl_conn) to one Sentinel at a time. When
 * that connection becomes ready it asks SENTINEL get-master-addr-by-name
 * and, behind it on the same link, subscribes to +switch-master, and stays
 * subscribed: the answer and every switch of our master name go to the
 * owner (primary). A Sentinel that cannot be reached, refuses us or does
 * not know the name is left for the next in the list, with the
 * connection's backoff. The owner asks again (rdl_sentinel_refresh) when
 * its own connection to the primary fails: a switch announced while we
 * were not subscribed is then still learnt.
 *
 * Pure core like conn.c: no hiredis, time from the owner's clock, and the
 * transport closed only from rdl_sentinel_run() and rdl_sentinel_free().
 */
#ifndef REDLEASE_SENTINEL_H
#define REDLEASE_SENTINEL_H

#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "conn.h"
#include "heap.h"
#include "redlease.h"

typedef struct rdl_sentinel_owner {
    /* As rdl_conn_owner's: bracket every report, and say when ending. */
    rdl_relay_ops relay;
    /* A Sentinel named the primary: asked, or announcing a failover. */
    void (*primary)(void *owner, const char *host, int port);
    /* A failure's text, naming the Sentinel. */
    void (*error)(void *owner, const char *text, size_t len);
    /* A Sentinel refused us in a way retrying cannot cure (EAUTH, ETLS). */
    void (*refused)(void *owner, int status, int64_t now);
    /* rdl_sentinel_deadline() moved. */
    void (*deadline)(void *owner, int64_t at);
} rdl_sentinel_owner;

typedef struct rdl_sentinel {
    rdl_relay relay;    /* first: the connection's brackets go to the owner */
    rdl_heap_node wake; /* the owner's heap node for this connection's deadline */
    const rdl_sentinel_owner *ops; /* the owner (relay.owner) is told through these */
    rdl_addr addrs[REDLEASE_MAX_SENTINELS];
    int naddrs, current; /* the Sentinel the connection goes to */
    char *name;          /* the master name */
    const rdl_clock *clock;   /* the owner's */
    int64_t command_timeout;  /* how long a question may go unanswered */
    rdl_conn conn;
    rdl_req *query;   /* in flight, or NULL */
    int64_t answer_by; /* the query's deadline, or RDL_NEVER */
    rdl_req *sub;     /* the subscription, until its end comes back */
    int stay;         /* the link is being dropped to ask again: same Sentinel */
    uint32_t refused; /* Sentinels that refused us (EAUTH, ETLS) since the last answer */
} rdl_sentinel;

/* Reads a +switch-master message ("NAME OLDHOST OLDPORT NEWHOST NEWPORT"):
 * 1 when it is about name, with the new primary in host (size bytes) and
 * *port; else 0. */
int rdl_sentinel_parse_switch(const char *msg, size_t len, const char *name, char *host,
                              size_t size, int *port);

/* The client's sentinel_* options (checked). */
typedef struct rdl_sentinel_config {
    const char *addrs;
    const char *master_name;
    const char *username;
    const char *password;
    int tls; /* reach them over TLS, with base's settings */
} rdl_sentinel_config;

/* From the client's options (checked); connection settings (timeouts,
 * reconnect delays, TLS) from base. 0 or ENOMEM (then rdl_sentinel_free()
 * still frees what was made). */
int rdl_sentinel_init(rdl_sentinel *s, const rdl_sentinel_config *o,
                      const rdl_conn_config *base, const rdl_sentinel_owner *ops, void *owner,
                      rdl_clock *clock, const rdl_rng *rng);
void rdl_sentinel_free(rdl_sentinel *s);
int rdl_sentinel_attach(rdl_sentinel *s, rdl_transport_factory make, struct rdl_loop *loop);
/* Connects to the first Sentinel. */
void rdl_sentinel_start(rdl_sentinel *s, int64_t now);
/* From the owner's timer: the deadline passed, or rdl_sentinel_due(). */
void rdl_sentinel_run(rdl_sentinel *s, int64_t now);
/* The primary may have moved (the owner's link to it failed): ask again,
 * unless a question is out already. Safe inside transport callbacks. */
void rdl_sentinel_refresh(rdl_sentinel *s);

static inline int rdl_sentinel_due(const rdl_sentinel *s) { return rdl_conn_due(&s->conn); }
static inline int64_t rdl_sentinel_deadline(const rdl_sentinel *s)
{
    int64_t at = rdl_conn_deadline(&s->conn);
    return s->query && s->answer_by < at ? s->answer_by : at;
}

#endif
