/* SPDX-License-Identifier: MIT */
/* The seam between the pure core and the Redis connection.
 *
 * The core never includes hiredis. A connection (src/conn.c) talks to its
 * link through this small vtable; src/transport_hiredis.c implements it on
 * the hiredis async API (both 0.14 and 1.x), and the unit tests implement it
 * with a scripted fake. Replies are copied into rdl_reply so tests never
 * build redisReply.
 *
 * Rules both sides keep:
 *  - connect() never calls back synchronously; its outcome comes later
 *    through rdl_conn_on_connected().
 *  - submit() either returns 0, and then rdl_conn_on_reply() is called
 *    exactly once for that req (with r == NULL if the connection is lost or
 *    closed first), or returns nonzero and never calls back for it.
 *  - close() ends the connection now: before it returns, every submitted
 *    req has had its rdl_conn_on_reply(r == NULL). No rdl_conn_on_disconnected
 *    is reported for a close the core asked for.
 *  - subscribe() is submit() for a SUBSCRIBE: its replies (the
 *    confirmation, then every message) come through rdl_conn_on_push(),
 *    any number of times, and its end (link lost or closed) as one
 *    rdl_conn_on_reply(r == NULL), as any request's. Nothing else is sent
 *    on that link after it.
 *  - A connection that breaks by itself reports every pending req with
 *    r == NULL, then rdl_conn_on_disconnected().
 *  - destroy() frees the transport; it is only called while closed.
 *  - The core calls close() and destroy() only from outside transport
 *    callbacks (from its timer or from a user's call), never from inside
 *    rdl_conn_on_reply() or rdl_conn_on_connected(): hiredis must not be freed
 *    from inside its own callbacks (0.14 crashes on it).
 */
#ifndef REDLEASE_TRANSPORT_H
#define REDLEASE_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

struct rdl_conn;
struct rdl_loop;

enum rdl_reply_type {
    RDL_REPLY_STATUS = 1, /* +OK */
    RDL_REPLY_ERROR,      /* -ERR ... (str) */
    RDL_REPLY_INTEGER,    /* :n */
    RDL_REPLY_NIL,        /* $-1 / *-1 */
    RDL_REPLY_STRING,     /* $n (str) */
    RDL_REPLY_ARRAY,      /* *n (elements, element) */
    RDL_REPLY_OTHER       /* RESP3 types we never ask for, arrays nested too deep */
};

/* A flat array of at most this many elements (WAITAOF's two counts, ROLE,
 * a Sentinel's answer) is copied without allocating. */
#define RDL_REPLY_MAX_ELEMENTS 8
/* Arrays inside arrays are copied to this depth (CLUSTER SLOTS has 4:
 * ranges, range, node, the node's metadata); deeper ones are OTHER. */
#define RDL_REPLY_MAX_DEPTH 4

typedef struct rdl_reply {
    int type;
    long long integer;
    const char *str; /* STATUS, ERROR, STRING: not NUL-terminated */
    size_t len;
    size_t elements; /* ARRAY: how many */
    const struct rdl_reply *element; /* ARRAY: all of them */
} rdl_reply;

/* The status reply OK. */
static inline int rdl_reply_is_ok(const rdl_reply *r)
{
    return r->type == RDL_REPLY_STATUS && r->len == 2 && r->str[0] == 'O' && r->str[1] == 'K';
}

/* TLS settings of a connection: the client's tls_* options (man 3
 * redlease, TLS), or a Sentinel's derived from them. */
typedef struct rdl_tls_config {
    int enable;
    const char *ca_file;
    const char *ca_dir;
    const char *cert_file;
    const char *key_file;
    const char *server_name; /* NULL: the host */
    int insecure;
} rdl_tls_config;

typedef struct rdl_endpoint {
    const char *host;
    int port;
    const char *unix_path;
    const rdl_tls_config *tls; /* NULL: plaintext */
} rdl_endpoint;

typedef struct rdl_transport_ops {
    /* Starts connecting; 0, or a status code (then nothing is pending):
     * REDLEASE_ETLS when TLS cannot be set up (a CA or key file). A TLS
     * handshake that fails later is reported with REDLEASE_ETLS too. */
    int (*connect)(void *self, const rdl_endpoint *ep);
    /* Sends one command; req is returned through rdl_conn_on_reply. */
    int (*submit)(void *self, int argc, const char **argv, const size_t *lens, void *req);
    /* Sends a SUBSCRIBE; messages come through rdl_conn_on_push (above). */
    int (*subscribe)(void *self, int argc, const char **argv, const size_t *lens, void *req);
    void (*close)(void *self);
    void (*destroy)(void *self);
} rdl_transport_ops;

typedef struct rdl_transport {
    const rdl_transport_ops *ops;
    void *self;
} rdl_transport;

/* Makes the transport of a connection (src/transport_hiredis.c, or the
 * unit tests' fake); it reports to cn. */
typedef int (*rdl_transport_factory)(rdl_transport *out, struct rdl_conn *cn,
                                     struct rdl_loop *loop);

/* The hiredis binding: each new context's socket is watched on loop. */
int rdl_transport_hiredis_new(rdl_transport *out, struct rdl_conn *cn, struct rdl_loop *loop);

/* Called by the transport, on the connection it was made for (src/conn.c).
 * status: REDLEASE_OK or a negative status code; detail: error text or
 * NULL. None of these runs user callbacks. */
void rdl_conn_on_connected(struct rdl_conn *cn, int status, const char *detail);
void rdl_conn_on_disconnected(struct rdl_conn *cn, int status, const char *detail);
void rdl_conn_on_reply(struct rdl_conn *cn, void *req, const rdl_reply *r);
/* A reply to a subscription (never NULL): its confirmation or a message. */
void rdl_conn_on_push(struct rdl_conn *cn, void *req, const rdl_reply *r);
/* The transport has dispatched what one read brought and is outside its
 * own callbacks and the library: unlike the calls above, this may run user
 * callbacks, close the transport and free the client (touch nothing after
 * it). The timer does the same work a loop iteration later otherwise. */
void rdl_conn_on_read_done(struct rdl_conn *cn);
/* Keeps the text of an error the transport returned synchronously (a
 * connect that failed at once), for redlease_client_errstr(). */
void rdl_conn_note_error(struct rdl_conn *cn, const char *detail);

#endif
