/* SPDX-License-Identifier: MIT */
/* One Redis connection (src/conn.c): the transport, the connection's
 * states, the handshake (AUTH, SELECT, PING), its deadlines (connect,
 * handshake, the stall rule) and reconnecting with backoff.
 *
 * A connection knows nothing of who owns it. It reports through the
 * rdl_conn_owner table it is given at creation, reads time from the
 * owner's clock and draws reconnect delays from the owner's generator, so
 * one owner can hold several (a client's command connection today; a
 * subscriber connection, Sentinel and Cluster nodes to come).
 *
 * Like the rest of the core it runs nothing of the user's: it never calls
 * back synchronously from rdl_conn_submit(), and closes the transport only
 * from rdl_conn_run() and rdl_conn_free(), which the owner calls from
 * outside transport callbacks (src/transport.h).
 */
#ifndef REDLEASE_CONN_H
#define REDLEASE_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "backoff.h"
#include "clock.h"
#include "redlease.h"
#include "req.h"
#include "transport.h"

enum rdl_conn_state {
    RDL_CONN_IDLE,      /* no loop yet */
    RDL_CONN_CONNECTING,
    RDL_CONN_HANDSHAKE, /* AUTH / SELECT / PING in flight */
    RDL_CONN_READY,
    RDL_CONN_DOWN,      /* broken; the transport's disconnect report follows */
    RDL_CONN_BACKOFF    /* waiting to reconnect */
};

/* What a connection tells its owner. Each gets the owner pointer given to
 * rdl_conn_init(); none may free the connection. */
typedef struct rdl_conn_owner {
    /* Bracket every report of the transport, so the owner can put off what
     * must not happen inside one (freeing itself, arming its timer). */
    void (*enter)(void *owner);
    void (*leave)(void *owner);
    /* Nonzero once the owner is ending (freed from inside a report): the
     * transport's reports are then only accounted for, never acted on. */
    int (*ending)(void *owner);
    /* The handshake passed: the connection is READY, its epoch counted. */
    void (*ready)(void *owner);
    /* The server refused the connection in a way retrying cannot cure
     * (EAUTH, EPERM, ECONFIG): what waits for a connection can stop. */
    void (*refused)(void *owner, int status, int64_t now);
    /* A request came back (r NULL: the link took it). req is the owner's,
     * to free; NULL when it was one of the connection's own (the
     * handshake), so the owner still learns one fewer is in flight. */
    void (*reply)(void *owner, rdl_req *req, const rdl_reply *r);
    /* A subscription's confirmation or message (rdl_conn_subscribe); its
     * end comes through reply, NULL. Only owners that subscribe get it. */
    void (*push)(void *owner, rdl_req *req, const rdl_reply *r);
    /* A connection event to emit (REDLEASE_EV_CONNECTED, _DISCONNECTED,
     * _RECONNECTING); its detail is the text error() gave last. */
    void (*event)(void *owner, int type, int status, int64_t retry_in);
    /* The text of a failure (the transport's, or Redis's error reply);
     * NULL clears it. */
    void (*error)(void *owner, const char *text, size_t len);
    /* The connection's deadline moved (rdl_conn_run() is due then). */
    void (*deadline)(void *owner, int64_t at);
    /* Optional: rdl_conn_on_read_done(). What the replies put off to the
     * timer (callbacks owed) may run now. */
    void (*drain)(void *owner);
    /* Optional: req (the owner's, or one of the connection's own) is
     * reported soon (rdl_conn_prefetch): its memory may be fetched ahead.
     * Reads req; changes nothing. */
    void (*prefetch)(void *owner, void *req);
} rdl_conn_owner;

/* The brackets a module that keeps a connection for its owner (Sentinel,
 * the wake-up channel) passes on unchanged: the owner's table of the
 * module begins with an rdl_relay_ops, the module with an rdl_relay, and
 * the module's rdl_conn_owner table names rdl_relay_enter, _leave,
 * _ending and _drain. */
typedef struct rdl_relay_ops {
    void (*enter)(void *owner);
    void (*leave)(void *owner);
    int (*ending)(void *owner);
    void (*drain)(void *owner); /* what a read made due may run now */
} rdl_relay_ops;

typedef struct rdl_relay {
    const rdl_relay_ops *ops;
    void *owner;
} rdl_relay;

void rdl_relay_enter(void *module);
void rdl_relay_leave(void *module);
int rdl_relay_ending(void *module);
void rdl_relay_drain(void *module);

/* What to connect to and how. The connection keeps copies of the strings. */
typedef struct rdl_conn_config {
    const char *host, *unix_path; /* unix_path, when set, wins */
    int port, db;
    const char *username, *password;
    int64_t connect_timeout, command_timeout;
    int64_t reconnect_min, reconnect_max;
    const rdl_tls_config *tls; /* NULL or enable 0: plaintext */
    int verify_primary; /* the handshake ends with ROLE, which must say "master" */
    int hold_backoff;   /* a ready link does not reset the reconnect backoff: the
                           owner does (rdl_conn_backoff_reset) once it proved useful */
    int probe;          /* the handshake asks which conditional commands the
                           server has (rdl_conn_native) and whether it runs
                           scripts for us (rdl_conn_scripts_off) */
    int read_clock;     /* the handshake reads the server's clock (TIME):
                           rdl_conn_server_ms() */
    int read_uptime;    /* the handshake reads how long the server has run
                           (INFO server): rdl_conn_started_at() */
} rdl_conn_config;

/* The server's own conditional commands a connection found: RDL_NATIVE_*
 * bits (src/scripts.h). */


/* In the header so an owner can embed it; its fields are conn.c's alone,
 * everyone else goes through the functions below. */
typedef struct rdl_conn {
    const rdl_conn_owner *owner_ops;
    void *owner;
    rdl_clock *clock; /* the owner's; a read here holds its time (above) */
    const rdl_rng *rng;

    /* settings (rdl_conn_config) */
    char *host, *unix_path, *username, *password;
    /* What events and error texts call the server (rdl_addr_name): the
     * link's while there is one, else where the next connect goes. Made
     * when the address is set, or as a link to an old address ends, so
     * reporting never formats or allocates. */
    char name[RDL_ADDR_NAME_MAX];
    rdl_tls_config tls; /* its strings are the connection's copies */
    int port, db;
    int verify_primary, hold_backoff, probe, read_clock, read_uptime;
    int64_t clock_offset; /* the server's clock minus ours, as the handshake of
                             epoch clock_epoch read it */
    uint64_t clock_epoch;
    int64_t started_at;   /* when the server started, on our clock, at the
                             latest, as the handshake of epoch started_epoch
                             read it */
    uint64_t started_epoch;
    int native;  /* RDL_NATIVE_* the server of this epoch has (0 until its probe is answered) */
    int scripts_off; /* the server of this epoch refuses scripts (why: scripts_why) */
    char scripts_why[160];
    int go_now; /* dropped to go elsewhere: reconnect at once */
    int64_t connect_timeout, command_timeout;

    rdl_transport tr;   /* tr.ops is NULL until rdl_conn_attach() */
    int state;          /* enum rdl_conn_state */
    uint64_t epoch;     /* counts connections that became ready */
    int64_t at;         /* deadline, reconnect time, or (ready) stall check */
    int64_t stall_since; /* ready: send time of a timed-out command, or -1 */
    rdl_backoff reconnect;
    int hs_pending;     /* handshake replies awaited */
    int hs_failed;      /* status, or 0 */
    int hs_ping_answered; /* the handshake's PING was answered on this link */
    uint64_t reqs_out;  /* submitted, not yet reported back by the transport */
    int64_t rtt_floor;  /* shortest round trip on this connection, from its
                           handshake on (a stalled reply says nothing of the
                           path), or 0 */
    uint64_t rtt_epoch; /* the connection rtt_floor was measured on */
    int error;          /* why the last connection failed; 0 once one is ready */
    int definite;       /* that failure will not heal by retrying (EAUTH...) */
    int hs_answered;    /* that failure is the handshake's error reply (LOADING...) */
    int drop_status;    /* a reply said this connection is no use: drop it */
    int64_t reply_now;  /* the clock when the reply being reported to the
                           owner came (read once, for its round trip); set
                           before every owner reply with a reply, r != NULL */

    /* for redlease_client_stats() */
    uint64_t connects, disconnects, commands_sent;
} rdl_conn;

/* IDLE, nothing to connect with yet; 0 or REDLEASE_ENOMEM (then
 * rdl_conn_free() still frees what was made). */
/* The settings cn was made with (its own copies of the strings): another
 * connection made from them goes the same way, to its own address. */
void rdl_conn_settings(const rdl_conn *cn, rdl_conn_config *out);
int rdl_conn_init(rdl_conn *cn, const rdl_conn_config *cfg, const rdl_conn_owner *ops, void *owner,
                  rdl_clock *clock, const rdl_rng *rng);
/* Closes the transport (every request comes back, NULL) and frees it. */
void rdl_conn_free(rdl_conn *cn);
/* Makes the transport on the owner's loop; 0 or a status. */
int rdl_conn_attach(rdl_conn *cn, rdl_transport_factory make, struct rdl_loop *loop);
/* Starts the first connect; without an address (host and unix_path
 * NULL) it waits for rdl_conn_set_endpoint(). */
void rdl_conn_connect(rdl_conn *cn, int64_t now);
/* Where to connect from now on (a primary that Sentinel named). One
 * waiting to reconnect goes now; a link to elsewhere is dropped
 * (rdl_conn_restart) and the next one made at once. 0 for the same
 * address, 1 when it moved, 2 when it moved and drops a link (its
 * disconnect report follows), or ENOMEM. */
int rdl_conn_set_endpoint(rdl_conn *cn, const char *host, int port, int64_t now);
/* Only the address the next connect goes to (a connection going round a
 * list of servers): nothing else changes (its name, while a link to the
 * old one lasts, neither). 0 or ENOMEM. */
int rdl_conn_set_address(rdl_conn *cn, const char *host, int port);
/* Drops the link at the owner's next timer run (rdl_conn_due()), from
 * anywhere, inside transport callbacks too: nothing more is sent on it,
 * and it reconnects with backoff. why: the text of the failure, or NULL. */
void rdl_conn_restart(rdl_conn *cn, int status, const char *why);
/* From the owner's timer: the deadline passed, or rdl_conn_due(). */
void rdl_conn_run(rdl_conn *cn, int64_t now);
/* With hold_backoff: the link proved useful, the next failure starts the
 * reconnect delays afresh. */
void rdl_conn_backoff_reset(rdl_conn *cn);
/* The conditional commands the server of the ready link has (RDL_NATIVE_*),
 * 0 when not ready, not known yet, or not asked. */
static inline int rdl_conn_native(const rdl_conn *cn)
{
    return cn->state == RDL_CONN_READY ? cn->native : 0;
}
/* The server's clock now (ms since the epoch), from ours now and what the
 * handshake of the ready link read, to within half its round trip; -1
 * when not ready, or not read (not asked, or TIME refused). */
static inline int64_t rdl_conn_server_ms(const rdl_conn *cn, int64_t now)
{
    return cn->state == RDL_CONN_READY && cn->clock_epoch == cn->epoch ? now + cn->clock_offset : -1;
}
/* When the server of the ready link started, on our clock (ms), at the
 * latest it can have (INFO server counts whole seconds); RDL_UNKNOWN_START
 * when not ready, or not read (not asked, or INFO refused: an ACL without
 * @dangerous). */
#define RDL_UNKNOWN_START INT64_MIN
static inline int64_t rdl_conn_started_at(const rdl_conn *cn)
{
    return cn->state == RDL_CONN_READY && cn->started_epoch == cn->epoch ? cn->started_at : RDL_UNKNOWN_START;
}
/* The server refused one of them (an unknown command, ACL, syntax): scripts
 * on this link from now on; a new link asks again. */
static inline void rdl_conn_native_refused(rdl_conn *cn) { cn->native = 0; }
/* 1 when the server of the ready link refuses to run scripts for us (the
 * handshake's probe found it, or a script was refused since: unknown
 * command, no permission to run it, no Lua engine); its text in why.
 * Asked again on every link; 0 when not asked (nothing is known). */
static inline int rdl_conn_scripts_off(const rdl_conn *cn)
{
    return cn->state == RDL_CONN_READY && cn->scripts_off;
}
static inline const char *rdl_conn_scripts_why(const rdl_conn *cn) { return cn->scripts_why; }
/* A script was refused (text of len bytes says how): none are sent on
 * this link from now on. */
void rdl_conn_scripts_refused(rdl_conn *cn, const char *text, size_t len);
/* Sends argv for req; 0 or a status (req not sent, never reported). */
int rdl_conn_submit(rdl_conn *cn, rdl_req *req, int argc, const char **argv, const size_t *lens);
/* The same for a SUBSCRIBE: its messages come to the owner's push. */
int rdl_conn_subscribe(rdl_conn *cn, rdl_req *req, int argc, const char **argv, const size_t *lens);
/* The transport's reads, bracketed (rdl_conn_on_read_done() stays for a
 * transport that does not bracket them): the owner is entered once for
 * the whole batch of replies a read dispatches, so what it does as it
 * leaves (arming its timer) is done once per read, not once per reply.
 * After read_end the connection may be gone (the owner drained). */
void rdl_conn_read_begin(rdl_conn *cn);
/* The transport knows req is reported after the reply being read: the
 * owner may prefetch what it will touch then. */
static inline void rdl_conn_prefetch(rdl_conn *cn, void *req)
{
    if (cn->owner_ops->prefetch) cn->owner_ops->prefetch(cn->owner, req);
}
void rdl_conn_read_end(rdl_conn *cn);
/* The stall rule: a command sent at sent_at is still unanswered at now,
 * past its timeout (or past the lease it was renewing). */
void rdl_conn_note_timeout(rdl_conn *cn, int64_t sent_at, int64_t now);

static inline int rdl_conn_ready(const rdl_conn *cn) { return cn->state == RDL_CONN_READY; }
/* Never asked to connect (rdl_conn_connect) yet. */
static inline int rdl_conn_idle(const rdl_conn *cn) { return cn->state == RDL_CONN_IDLE; }
/* The host it connects to, or NULL (a unix socket, or no address yet). */
static inline const char *rdl_conn_host(const rdl_conn *cn) { return cn->host; }
/* The server its events and failures are about, "HOST:PORT" ("[ADDR]:PORT",
 * a unix socket's path): the link's, or with none where the next connect
 * goes; NULL with no address yet. Lives as long as the connection, until
 * its address changes. */
static inline const char *rdl_conn_name(const rdl_conn *cn) { return cn->name[0] ? cn->name : NULL; }
static inline int rdl_conn_port(const rdl_conn *cn) { return cn->port; }
/* Work for the owner's timer now, whatever the deadline: a handshake that
 * failed, or a reply that condemned the link (never done inside hiredis). */
static inline int rdl_conn_due(const rdl_conn *cn)
{
    return (cn->hs_failed && cn->state == RDL_CONN_HANDSHAKE) ||
           (cn->drop_status && cn->state == RDL_CONN_DOWN);
}
static inline int64_t rdl_conn_deadline(const rdl_conn *cn) { return cn->at; }
static inline uint64_t rdl_conn_epoch(const rdl_conn *cn) { return cn->epoch; }
static inline int64_t rdl_conn_rtt_floor(const rdl_conn *cn) { return cn->rtt_floor; }
static inline uint64_t rdl_conn_in_flight(const rdl_conn *cn) { return cn->reqs_out; }
/* The refusal retrying cannot cure (EAUTH, EPERM, ECONFIG), or 0. */
static inline int rdl_conn_refusal(const rdl_conn *cn) { return cn->definite ? cn->error : 0; }
/* Adds what the connection counts itself to a client's statistics. */
static inline void rdl_conn_stats(const rdl_conn *cn, redlease_stats *out)
{
    out->connects += cn->connects;
    out->disconnects += cn->disconnects;
    out->commands_sent += cn->commands_sent;
}
/* Not ready, and nothing failed since it last was (or since the start):
 * a connect is under way, with no error to tell of yet. */
static inline int rdl_conn_connecting(const rdl_conn *cn)
{
    return cn->state != RDL_CONN_READY && !cn->error;
}
/* The status an operation that could not be sent reports: a refusal, or
 * a server that answered the handshake with an error (LOADING, MISCONF:
 * EREDIS, as man 3's table says), else no connection. */
static inline int rdl_conn_status(const rdl_conn *cn)
{
    return cn->definite || cn->hs_answered ? cn->error : REDLEASE_ECONN;
}

#endif
