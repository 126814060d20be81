/* SPDX-License-Identifier: MIT */
/* redlease: Redis-backed distributed leases for event-driven C servers.
 *
 * One redlease_client owns a hiredis async connection (with Sentinel, one
 * more to a Sentinel; on a Cluster, one per primary it needs) and runs on the
 * caller's event loop through an adapter (<redlease/libev.h>, or your own:
 * see "Loop adapters" below). A redlease_lock is one acquire -> hold ->
 * release lifecycle of one resource.
 *
 * Lifetime rules (the contract):
 *  - If a call that takes a callback returns an error, that callback never
 *    runs. Callbacks never run inside the call that started the operation:
 *    they are delivered from the loop, by the client's timer
 *    (redlease_client_on_timer) or right after a read
 *    (redlease_client_on_io).
 *  - on_acquire runs exactly once (REDLEASE_OK, an error, or
 *    REDLEASE_ECANCELED). on_lost runs at most once, and only after a
 *    successful acquire. on_release runs exactly once and is the last
 *    callback of that handle; after it returns the handle is freed.
 *  - Every handle from a successful redlease_acquire() is ended by exactly
 *    one redlease_release(), in any state: it cancels a pending acquire,
 *    releases a held lease, or just frees a failed or lost one.
 *  - Any API call is safe from inside any callback, including
 *    redlease_client_free() and redlease_release() of the same handle.
 *  - redlease_client_free() ends every handle of the client at once: pending
 *    acquires get on_acquire(REDLEASE_ECANCELED), held leases get
 *    on_lost(REDLEASE_LOST_CLOSED) (the key is left to its TTL), and handles
 *    being released get on_release(REDLEASE_ECANCELED), all before free
 *    returns. From those callbacks redlease_acquire() returns
 *    REDLEASE_ECANCELED, and redlease_release() of any handle of the client
 *    works as during a close: it returns REDLEASE_OK and its on_release
 *    (REDLEASE_ENOTHELD after on_lost, else REDLEASE_OK) runs before free
 *    returns. If a graceful close (redlease_client_close) was under way,
 *    its done callback runs last, before free returns; calls on the client
 *    from it do nothing. After that no callback of that client runs and
 *    every handle is gone.
 *
 * Threads: a client and its handles belong to the thread running its loop.
 */
#ifndef REDLEASE_H
#define REDLEASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define REDLEASE_EXTERN __attribute__((visibility("default")))
#else
#define REDLEASE_EXTERN
#endif

#define REDLEASE_VERSION_MAJOR 0
#define REDLEASE_VERSION_MINOR 2
#define REDLEASE_VERSION_PATCH 0
#define REDLEASE_VERSION "0.2.0"
/* The version of the library actually linked (may differ from the header). */
REDLEASE_EXTERN const char *redlease_version(void);

/* ------------------------------------------------------------------ status */
/* REDLEASE_OK is 0 and every error is negative. Values are stable. */
enum redlease_status {
    REDLEASE_OK = 0,
    REDLEASE_EINVAL = -1,    /* argument that cannot work */
    REDLEASE_ENOMEM = -2,    /* out of memory */
    REDLEASE_EBUSY = -3,     /* held by another lease (this client's own too: see lock
                                option reentrant); wait budget or attempts ran out */
    REDLEASE_ETIMEDOUT = -4, /* Redis did not answer in time */
    REDLEASE_ECANCELED = -5, /* released before the acquire completed, or client freed */
    REDLEASE_ECONN = -6,     /* no connection to Redis */
    REDLEASE_EREDIS = -7,    /* Redis answered with an error (see redlease_client_errstr) */
    REDLEASE_EPROTO = -8,    /* unexpected reply */
    REDLEASE_ENOTHELD = -9,  /* release: the lease was no longer ours (expired or taken) */
    REDLEASE_ESYS = -10,     /* the OS refused (no randomness for a token); see errno */
    REDLEASE_EAUTH = -11,    /* Redis refused the credentials (WRONGPASS, NOAUTH, AUTH error) */
    REDLEASE_EPERM = -12,    /* the ACL user may not run the command or touch the key (NOPERM) */
    REDLEASE_ECONFIG = -13,  /* Redis refused a client setting (SELECT of a missing database) */
    REDLEASE_ENOTSUP = -14,  /* this build cannot do what was asked (TLS without TLS support,
                                an option field of a newer header), or the server cannot:
                                the lease needs Lua scripts, which it refuses (the
                                error text says what is missing) */
    REDLEASE_ETLS = -15,     /* TLS failed: certificate not trusted, wrong name, handshake refused */
    REDLEASE_EREPLICAS = -16, /* too few replicas acknowledged (or fsynced) the write in time */
    REDLEASE_EQUORUM = -17,   /* quorum: too few servers said yes, for another reason than
                                 another holder (see redlease_client_errstr) */
    REDLEASE_EKIND = -18      /* the resource is another kind than this lease asks for (a
                                 mutex or shared/exclusive, or a semaphore of another
                                 limit; the text says which), or its key holds a value
                                 of another type (Redis's WRONGTYPE): nothing held is
                                 touched */
};
/* How each Redis error reply is treated (transient: retried; definite:
 * ends the operation at once) is one table: man 3 redlease, ERRORS FROM
 * REDIS. */

/* Reasons passed to the lost callback. */
enum redlease_lost_reason {
    REDLEASE_LOST_EXPIRED = 1,   /* local validity deadline passed before a renewal was confirmed */
    REDLEASE_LOST_NOT_OWNER = 2, /* Redis says the key is gone or holds another token */
    REDLEASE_LOST_MAX_HOLD = 3,  /* the lease reached its max_hold_ms cap */
    REDLEASE_LOST_CLOSED = 4     /* the client was freed or closed while the lease was held */
};

/* A short English text for a status code; never NULL. */
REDLEASE_EXTERN const char *redlease_strerror(int status);
/* A short English text for a lost reason; never NULL. */
REDLEASE_EXTERN const char *redlease_lost_reason_str(int reason);

/* ----------------------------------------------------------------- handles */
typedef struct redlease_client redlease_client;
typedef struct redlease_lock redlease_lock;

typedef void (*redlease_acquire_cb)(redlease_lock *lk, int status, void *arg);
typedef void (*redlease_lost_cb)(redlease_lock *lk, int reason, void *arg);
typedef void (*redlease_release_cb)(redlease_lock *lk, int status, void *arg);
typedef void (*redlease_close_cb)(redlease_client *c, void *arg);

/* ----------------------------------------------------------------- client */
/* 1 if this library was built with TLS support, else 0. */
REDLEASE_EXTERN int redlease_tls_available(void);
#define REDLEASE_MAX_SENTINELS 16
#define REDLEASE_MAX_SEEDS 16
#define REDLEASE_MAX_QUORUM 9

/* What renewals and releases are sent as (client option commands; man 3
 * redlease, CLIENT OPTIONS). Either way they mean the same. */
enum redlease_commands {
    REDLEASE_COMMANDS_AUTO = 0,   /* the server's own conditional commands where it has them
                                     (Valkey >= 9.0 DELIFEQ, Redis >= 8.4 DELEX, both
                                     SET IFEQ; asked per connection), else Lua scripts */
    REDLEASE_COMMANDS_SCRIPTS = 1 /* Lua scripts always; nothing asked */
};

/* Where a client's Redis is (client option topology). Each has its own
 * fields; a field of another topology that is set is REDLEASE_EINVAL
 * (redlease_client_options_error() names it): nothing is ignored. */
enum redlease_topology {
    REDLEASE_TOPOLOGY_SERVER = 0,   /* one Redis: host and port, or unix_path */
    REDLEASE_TOPOLOGY_SENTINEL = 1, /* the primary Sentinels name: sentinel_* */
    REDLEASE_TOPOLOGY_CLUSTER = 2,  /* a Redis Cluster: cluster_addrs */
    REDLEASE_TOPOLOGY_QUORUM = 3    /* independent masters, a majority holds: quorum_addrs */
};
#define REDLEASE_DEFAULT_HOST "127.0.0.1" /* host NULL */
#define REDLEASE_DEFAULT_PORT 6379        /* port 0 */

/* The option structs are flat, and grow at their end, never anywhere
 * else: redlease_*_options_init() records in struct_size
 * the size the caller's header gives, and every call that takes options
 * reads that many bytes. A program built against an older header keeps
 * working (the fields it does not know take their defaults); one built
 * against a newer header gets REDLEASE_ENOTSUP from an older library if it
 * set a field that library does not know. So options must be made by
 * their _init (a macro passing sizeof: it cannot be taken as a function
 * pointer); one that was not (struct_size 0) is REDLEASE_EINVAL. */
typedef struct redlease_client_options {
    size_t struct_size;         /* set by redlease_client_options_init(); leave it */
    int topology;               /* enum redlease_topology; REDLEASE_TOPOLOGY_SERVER */
    /* REDLEASE_TOPOLOGY_SERVER: host and port, or unix_path */
    const char *host;           /* NULL: REDLEASE_DEFAULT_HOST; a name is resolved by a
                                   blocking getaddrinfo */
    int port;                   /* 0: REDLEASE_DEFAULT_PORT */
    const char *unix_path;      /* NULL; when set, host and port must be unset */
    /* REDLEASE_TOPOLOGY_SENTINEL (man 3 redlease, SENTINEL): the client asks
     * the Sentinels where the primary of sentinel_master_name is, checks
     * with ROLE that it reached a primary, and follows failovers
     * (+switch-master; asking again after a lost connection or READONLY). */
    const char *sentinel_addrs;       /* "HOST:PORT[,HOST:PORT...]" (at most
                                         REDLEASE_MAX_SENTINELS; IPv6 as [ADDR]:PORT) */
    const char *sentinel_master_name; /* the name they monitor the primary by */
    const char *sentinel_username;    /* the Sentinels' own ACL user, or NULL */
    const char *sentinel_password;    /* the Sentinels' own password, or NULL: none */
    int sentinel_tls;                 /* nonzero: reach the Sentinels over TLS too, with
                                         the tls_* settings (their own address as the
                                         name); needs tls */
    /* REDLEASE_TOPOLOGY_CLUSTER (man 3 redlease, CLUSTER): the client reads
     * the slot map from the nodes (CLUSTER SLOTS), sends each lock's
     * commands to the primary serving its key's slot on a connection of
     * its own (made when first needed), and follows MOVED and ASK; db
     * must be 0. */
    const char *cluster_addrs;  /* some of its nodes, "HOST:PORT[,HOST:PORT...]" (at
                                   most REDLEASE_MAX_SEEDS; IPv6 as [ADDR]:PORT) */
    /* REDLEASE_TOPOLOGY_QUORUM (man 3 redlease, QUORUM), the Redlock
     * scheme: every lock command goes to all of them with the same token,
     * and a lease is held while a majority (N/2 + 1) confirmed it, its
     * validity counted from before the first send. Locks may not ask for
     * replica acknowledgement there. */
    const char *quorum_addrs;   /* 2 to REDLEASE_MAX_QUORUM distinct servers,
                                   "HOST:PORT,HOST:PORT[,...]" (IPv6 as [ADDR]:PORT); an
                                   odd number: 2k+1 of them survive k failures */
    /* Every server of every topology (a Sentinel has its own credentials) */
    const char *username;       /* NULL: AUTH password alone (or no AUTH) */
    const char *password;       /* NULL: no AUTH. Never logged nor put in events. */
    int db;                     /* 0; nonzero: SELECT db after connecting */
    const char *key_prefix;     /* "lock:"; at most 256 bytes, no "{" or "}"; redlease_key() */
    int64_t connect_timeout_ms; /* 2000 */
    int64_t command_timeout_ms; /* 2000: per command, hiredis 0.14 has none of its own */
    int64_t reconnect_min_ms;   /* 50: first reconnect delay cap (full jitter) */
    int64_t reconnect_max_ms;   /* 2000: reconnect delay cap; at least reconnect_min_ms */
    int commands;               /* enum redlease_commands: what renewals and releases are */
    /* TLS (man 3 redlease, TLS): the server's certificate chain and name
     * are verified unless tls_insecure is set. A library built without TLS
     * (hiredis 0.14, or configure --without-tls; redlease_tls_available()
     * is 0) refuses tls with REDLEASE_ENOTSUP: never a silent plaintext
     * connection. A tls_* field set without tls is REDLEASE_EINVAL. */
    int tls;                     /* 0: plaintext */
    const char *tls_ca_file;     /* PEM file of the CAs to trust */
    const char *tls_ca_dir;      /* or a folder of them (c_rehash); both NULL: the system's */
    const char *tls_cert_file;   /* client certificate chain, PEM (mutual TLS); needs
                                    tls_key_file */
    const char *tls_key_file;    /* its private key, PEM */
    const char *tls_server_name; /* SNI, and the name the certificate must carry; NULL: host */
    int tls_insecure;            /* nonzero: do not verify the server at all (tests only) */
    /* Who holds (man 3 redlease, HOLDERS): every lease and every queued
     * waiter of this client leaves a record beside its token in Redis,
     * "PID AT FENCE HOST LABEL" (the pid, when by the server's clock, the
     * fence minted, the host name, this label), for redlease status and
     * the like to show. It never decides ownership: the token does. */
    const char *label;           /* NULL: the program's name; else 1 to REDLEASE_MAX_LABEL
                                    bytes, shown cleaned (control characters and invalid
                                    UTF-8 as "?") */
    /* REDLEASE_TOPOLOGY_QUORUM: Redlock's "delayed restart", kept by the
     * client. A member whose server started less than this long ago (INFO
     * server's uptime, read as the link is made) does not count toward an
     * acquire's majority: had it restarted without its data, an older
     * holder's majority counted it, and that holder may believe it holds
     * until its own TTL ends. Its yes is kept (and deleted with the rest
     * when the acquire fails); a member whose INFO is denied (an ACL
     * without @dangerous) is counted as ever. */
    int64_t quorum_restart_guard_ms; /* 0: each acquire's own ttl_ms (every holder of
                                        the resource uses the same TTL or less);
                                        REDLEASE_RESTART_GUARD_OFF: none (the members
                                        persist every write, or restart late); else
                                        the longest TTL any holder uses */
} redlease_client_options;
#define REDLEASE_RESTART_GUARD_OFF (-1)

/* Fills o with the defaults (below each field); size is sizeof *o. */
REDLEASE_EXTERN void redlease_client_options_init_sized(redlease_client_options *o, size_t size);
#define redlease_client_options_init(o) redlease_client_options_init_sized((o), sizeof *(o))
/* Why redlease_client_new() would refuse o (REDLEASE_EINVAL; or
 * REDLEASE_ENOTSUP: TLS in a library without it, a field of a newer
 * header): a short English text naming the field, or the fields that
 * conflict; NULL when o is accepted (or NULL). The text is static. */
REDLEASE_EXTERN const char *redlease_client_options_error(const redlease_client_options *o);

/* Creates a client (strings in o are copied). o NULL: defaults. It does not
 * connect until a loop is attached (redlease_libev_attach() or
 * redlease_client_attach_loop()). */
REDLEASE_EXTERN int redlease_client_new(redlease_client **out, const redlease_client_options *o);

/* Graceful close: cancels pending acquires, releases every held lease
 * (compare-and-delete, within command_timeout_ms), then calls done (may be
 * NULL) from the loop and frees the client. Handles end with the same
 * callbacks as under redlease_client_free(), except that held leases (and
 * keys a cancelled acquire may have set) are deleted in Redis and the
 * callbacks run from the loop; redlease_release() from them works the same.
 * From done, calls on the client do nothing. */
REDLEASE_EXTERN void redlease_client_close(redlease_client *c, redlease_close_cb done, void *arg);

/* Immediate free; see the lifetime rules above. NULL is a no-op. */
REDLEASE_EXTERN void redlease_client_free(redlease_client *c);

/* Monotonic clock in milliseconds; the default reads CLOCK_MONOTONIC.
 * Replace it before attaching a loop (tests, simulations). */
typedef int64_t (*redlease_clock_fn)(void *arg);
REDLEASE_EXTERN int redlease_client_set_clock(redlease_client *c, redlease_clock_fn fn, void *arg);

/* Random numbers for backoff jitter; the default is a xorshift generator
 * seeded from the OS. Pin it to make backoff sequences reproducible. */
typedef uint32_t (*redlease_rng_fn)(void *arg);
REDLEASE_EXTERN int redlease_client_set_rng(redlease_client *c, redlease_rng_fn fn, void *arg);

/* Text of the last Redis or connection error seen by this client ("" if none),
 * after the name of the server it came from: "127.0.0.1:7001: CLUSTERDOWN ..."
 * (the name as in redlease_event.node). Valid until the next call into the
 * library. */
REDLEASE_EXTERN const char *redlease_client_errstr(const redlease_client *c);

/* 1 if the connection is up and ready for commands (a Cluster: the slot
 * map is known and a node is ready). */
REDLEASE_EXTERN int redlease_client_connected(const redlease_client *c);

/* ------------------------------------------------------------ observability */
enum redlease_event_type {
    REDLEASE_EV_ATTEMPT = 1,    /* an acquire attempt was sent (attempt = 1, 2, ...) */
    REDLEASE_EV_ACQUIRED,       /* lease confirmed; rtt_ms, remaining_ms */
    REDLEASE_EV_CONTENDED,      /* the key is held by another lease; retry_in_ms, -1: last;
                                   detail "held by this client (another of its handles)"
                                   when it is this client's, else NULL */
    REDLEASE_EV_ACQUIRE_FAILED, /* on_acquire gets status */
    REDLEASE_EV_RENEWED,        /* renewal confirmed; rtt_ms, remaining_ms */
    REDLEASE_EV_RENEW_FAILED,   /* renewal not confirmed (status); lease at risk; remaining_ms */
    REDLEASE_EV_LOST,           /* lost_reason says why; status: ENOTHELD (not owner),
                                   ETIMEDOUT (expired), ECANCELED (closed), OK (max hold) */
    REDLEASE_EV_RELEASED,       /* on_release gets status */
    REDLEASE_EV_CONNECTED,      /* connection ready (after AUTH/SELECT/PING); detail NULL */
    REDLEASE_EV_DISCONNECTED,   /* connection lost or connect failed (status) */
    REDLEASE_EV_RECONNECTING,   /* next connect in retry_in_ms */
    REDLEASE_EV_ATTEMPT_FAILED, /* an acquire attempt failed (status, detail: Redis's text);
                                   retry_in_ms, or -1 when on_acquire follows */
    REDLEASE_EV_RELEASE_FAILED, /* a release command failed (status, detail); retried in
                                   retry_in_ms, or -1 when on_release follows */
    REDLEASE_EV_PRIMARY,        /* Sentinel named a new primary; detail "HOST:PORT" */
    REDLEASE_EV_CHANNEL,        /* the wake-up channel of queued waiters is subscribed
                                   (status 0), or lost or refused (status, detail):
                                   waiters then check by their timers */
    REDLEASE_EV_SCRIPTS_OFF     /* a connection is ready to a server that refuses Lua
                                   scripts (status REDLEASE_ENOTSUP, detail: its
                                   answer): a mutex goes by its own commands there and
                                   waits by polling; what needs a script fails with
                                   REDLEASE_ENOTSUP (man 3 redlease, WITHOUT SCRIPTS).
                                   Once per connection */
};

typedef struct redlease_event {
    int type;             /* enum redlease_event_type */
    const char *key;      /* full key, or NULL for connection events */
    const char *token;    /* the lease token, or NULL */
    int64_t ttl_ms;
    int status;           /* a status code (REDLEASE_OK or an error) */
    int64_t rtt_ms;       /* round trip of the confirming command, or -1 */
    int64_t remaining_ms; /* local validity left, or -1 */
    int64_t retry_in_ms;  /* next attempt/reconnect delay, or -1 */
    int attempt;          /* acquire attempt number until on_acquire has run, then 0 */
    const char *detail;   /* this failure's Redis/connection error text, or NULL;
                             one server's names it first, as redlease_client_errstr */
    size_t key_len;       /* length of key in bytes (it may contain NUL), or 0 */
    int lost_reason;      /* REDLEASE_EV_LOST: enum redlease_lost_reason; else 0 */
    const char *node;     /* the server this is about, "HOST:PORT" ("[ADDR]:PORT" for
                             IPv6; a unix socket: its path), or NULL: a connection
                             event's server (a Cluster node, a quorum member, the
                             primary); a lock event's, the server its request went
                             to (a quorum: the member whose answer made the failure,
                             else NULL); REDLEASE_EV_PRIMARY's, the new primary;
                             REDLEASE_EV_CHANNEL's, the subscriber's server */
} redlease_event;

/* Called synchronously as things happen; keep it short. Any API call is
 * allowed from it. Pointers in ev are valid only during the call. */
typedef void (*redlease_event_cb)(redlease_client *c, const redlease_event *ev, void *arg);
REDLEASE_EXTERN void redlease_client_set_event_cb(redlease_client *c, redlease_event_cb fn, void *arg);

typedef struct redlease_stats {
    uint64_t attempts, acquired, contended, acquire_failed;
    uint64_t renewed, renew_failed, lost, released;
    uint64_t connects, disconnects, commands_sent, timeouts; /* every connection's, the
                                                                wake-up channel's too */
    uint64_t wakeups;   /* times the adapter's timer fired (on_timer calls) */
    uint64_t locks_now; /* handles alive: yours, and for a while some you released
                           (their key being deleted, or a lease they carry for
                           handles joined to it: lock option reentrant) */
    uint64_t held_now;  /* leases held: handles in the held state, a lease joined by
                           several handles once */
} redlease_stats;
REDLEASE_EXTERN void redlease_client_stats(const redlease_client *c, redlease_stats *out);

/* ------------------------------------------------------------------ locks */
#define REDLEASE_RENEW_OFF (-1)   /* renew_interval_ms: never renew */
#define REDLEASE_WAIT_FOREVER (-1) /* wait_ms: wait until acquired or released */

/* How an acquire with a wait budget (wait_ms != 0) waits while another
 * holds the lock (man 3 redlease, WAITING; docs/design.md, section 11). */
enum redlease_wait_mode {
    REDLEASE_WAIT_DEFAULT = 0, /* the library's choice: in this version REDLEASE_WAIT_QUEUE,
                                  and under a quorum REDLEASE_WAIT_WAKE (a semaphore's and
                                  a shared holder's: REDLEASE_WAIT_POLL) */
    REDLEASE_WAIT_QUEUE = 1,   /* in a FIFO queue kept in Redis: a release hands the lock
                                  to the queue's head and wakes it; REDLEASE_EINVAL under
                                  a quorum (N queues have no one order) */
    REDLEASE_WAIT_POLL = 2,    /* retries after a jittered backoff (wait_retry_*), in no order */
    REDLEASE_WAIT_WAKE = 3     /* waits in the queue, but a release only wakes the first
                                  waiter, who races for the lock with anyone asking
                                  (the releaser too): no order, no polling */
};

/* Which writes of a lease wait for replica acknowledgement (lock option
 * replica_scope; man 3 redlease, REPLICATION). */
enum redlease_replica_scope {
    REDLEASE_REPLICA_SCOPE_ALL = 0,    /* the acquire and every renewal: a renewal
                                          extends the lease only once acknowledged */
    REDLEASE_REPLICA_SCOPE_ACQUIRE = 1 /* the acquire only: renewals extend it at once,
                                          and a failover can lose what they added */
};

enum redlease_jitter {
    REDLEASE_JITTER_FULL = 0,        /* delay = U[0, min(max, base * 2^n)] */
    REDLEASE_JITTER_DECORRELATED = 1 /* delay = U[base, min(max, 3 * previous)] */
};

typedef struct redlease_lock_options {
    size_t struct_size;        /* set by redlease_lock_options_init(); leave it */
    /* The lease */
    int64_t ttl_ms;            /* 30000; at least 10 */
    int64_t renew_interval_ms; /* 0: ttl/3; REDLEASE_RENEW_OFF: never; else below ttl_ms */
    int64_t max_hold_ms;       /* 0: no cap; renewals stop and on_lost(MAX_HOLD) fires */
    int fencing;               /* nonzero: mint a fencing token with the lease */
    /* Waiting (man 3 redlease, WAITING): wait_ms is the budget, the only
     * bound on when on_acquire comes; wait_mode is how a contended acquire
     * waits inside it; the wait_retry_* backoff spaces POLL's attempts, and
     * in every mode the retry after an attempt that failed (an error, not
     * contention); wait_max_attempts caps the attempts of every mode. With
     * wait_ms 0 there is one attempt and the others do not matter. */
    int64_t wait_ms;            /* 0: one attempt; REDLEASE_WAIT_FOREVER; else on_acquire
                                   comes within this many ms, whatever the timeouts */
    int wait_mode;              /* enum redlease_wait_mode */
    int wait_max_attempts;      /* 0: no cap */
    int64_t wait_retry_base_ms; /* 50 */
    int64_t wait_retry_max_ms;  /* 1000; at least wait_retry_base_ms */
    int wait_jitter;            /* enum redlease_jitter */
    /* Replication acknowledgement (man 3 redlease, REPLICATION): the lease
     * counts as acquired only once the write reached replica_acks replicas
     * (WAIT), so a failover to one of them cannot lose it. Too few in
     * replica_timeout_ms: the key is deleted again and the attempt fails
     * with REDLEASE_EREPLICAS (retried inside the wait budget). A WAIT
     * holds up the connection's other commands while it waits; one at a
     * time is in flight, shared by the writes behind it. Under a quorum
     * replica_acks and replica_fsync are REDLEASE_EINVAL; replica_timeout_ms
     * and replica_scope are read only with one of them. */
    int replica_acks;           /* 0: no acknowledgement */
    int64_t replica_timeout_ms; /* 0: a quarter of the client's command_timeout_ms;
                                   below half of it */
    int replica_fsync;          /* nonzero: WAITAOF: also fsynced to the primary's
                                   AOF and to replica_acks replicas' (Redis >= 7.2) */
    int replica_scope;          /* enum redlease_replica_scope: which writes wait */
    /* The kind (man 3 redlease, KINDS): a mutex, which is also the
     * exclusive holder of a shared/exclusive resource; a shared holder
     * (shared), many at once and never beside an exclusive one; or a
     * counting semaphore of limit permits, of which this handle holds
     * weight. Each holder of any kind has its own token, TTL, renewals,
     * local deadline and fence. A resource is one kind at a time: while it
     * has holders, an acquire of another kind or limit fails at once with
     * REDLEASE_EKIND. Semaphore and shared holders wait in the resource's
     * queue, admitted in order (shared ones phase-fair beside exclusive
     * ones), or poll; WAKE is REDLEASE_ENOTSUP for them. Under a quorum
     * both poll (REDLEASE_WAIT_QUEUE is REDLEASE_EINVAL there), and each
     * server admits a semaphore's holders up to
     * redlease_semaphore_capacity(), so that never more than limit hold
     * by a majority: a weight above it is REDLEASE_EINVAL. */
    int limit;                  /* 0: not a semaphore; 1 to REDLEASE_MAX_PERMITS */
    int weight;                 /* 0: 1; with a limit only, at most it */
    int shared;                 /* nonzero: a shared holder; not with a limit */
    /* Re-entry (man 3 redlease, RE-ENTRY): while another handle of this
     * client that also set reentrant holds the resource (held, locally
     * valid, on_acquire(REDLEASE_OK) delivered) with the same kind (limit,
     * weight, shared) and fencing, this acquire joins its lease: no
     * command is sent, on_acquire(REDLEASE_OK) comes from the loop, and
     * the handle reports the lease's token, fence and validity. Checked
     * before each attempt and when such a lease is delivered. The lease
     * keeps the terms it was acquired with (ttl_ms, renewals, max_hold_ms,
     * replicas); it is released in Redis when the last of its handles is,
     * and a loss reaches every handle's on_lost. Without it (either
     * handle) a second acquire waits its turn like any other. */
    int reentrant;              /* 0: never joins nor is joined */
} redlease_lock_options;

/* Fills o with the defaults (below each field); size is sizeof *o. */
REDLEASE_EXTERN void redlease_lock_options_init_sized(redlease_lock_options *o, size_t size);
#define redlease_lock_options_init(o) redlease_lock_options_init_sized((o), sizeof *(o))

/* Limits of the options and names the library accepts; outside them the
 * call returns REDLEASE_EINVAL. Tools built on the library (the redlease
 * command) check their arguments against these, not against copies. */
#define REDLEASE_MAX_RESOURCE 1024 /* resource name, bytes, without the key prefix */
#define REDLEASE_MAX_PREFIX 256    /* key_prefix, bytes */
#define REDLEASE_MAX_LABEL 64      /* label, bytes */
#define REDLEASE_MIN_TTL_MS 10     /* ttl_ms */
/* ttl_ms: about 11.6 days, far below any overflow of the millisecond
 * arithmetic (t0 + ttl) and of Redis' PX argument */
#define REDLEASE_MAX_TTL_MS ((int64_t)1000 * 1000 * 1000)
/* connect_timeout_ms, command_timeout_ms, reconnect_*_ms, wait_retry_*_ms: a day */
#define REDLEASE_MAX_TIMEOUT_MS ((int64_t)24 * 3600 * 1000)
/* wait_ms and max_hold_ms: a year */
#define REDLEASE_MAX_WAIT_MS (REDLEASE_MAX_TIMEOUT_MS * 365)
/* replica_acks */
#define REDLEASE_MAX_REPLICAS 1000
/* limit (and so weight) */
#define REDLEASE_MAX_PERMITS 1000000000

/* What each server admits of a semaphore of limit permits (1 to
 * REDLEASE_MAX_PERMITS) when a holder needs a majority of servers (1 to
 * REDLEASE_MAX_QUORUM; 1: one server, which admits limit): the largest c
 * with floor(servers * c / majority) <= limit, at least 1. Holders each
 * admitted by a majority fill at least majority of the servers' counts
 * per permit, so at most limit of them hold at once whichever majorities
 * they have; when every server admits each holder, as when nothing
 * fails, c hold at once (man 3 redlease, KINDS). REDLEASE_EINVAL for
 * arguments out of range. */
REDLEASE_EXTERN int redlease_semaphore_capacity(int limit, int servers);

/* The Redis keys of a resource (man 3 redlease, KEYS): one lock key, with
 * fencing one counter key, with queued waiters (REDLEASE_WAIT_QUEUE)
 * their order and their entries, and a semaphore's or shared holders'
 * set and weights,
 * every key of a resource in one hash slot and no two resources sharing a
 * key:
 *   REDLEASE_KEY_LOCK     prefix "{" name "}"           e.g. lock:{job:42}
 *   REDLEASE_KEY_FENCE    prefix "{" name "}:fence"     e.g. lock:{job:42}:fence
 *   REDLEASE_KEY_QUEUE    prefix "{" name "}:queue"     (a sorted set)
 *   REDLEASE_KEY_WAITERS  prefix "{" name "}:waiters"   (a hash)
 *   REDLEASE_KEY_HOLDERS  prefix "{" name "}:holders"   (a sorted set)
 *   REDLEASE_KEY_WEIGHTS  prefix "{" name "}:weights"   (a hash)
 * where name is the resource, with a backslash put in front when it starts
 * with "}" or "\" (so the hash tag is never empty, and the map stays
 * one-to-one). The prefix may not contain "{" or "}" (at most REDLEASE_MAX_PREFIX bytes). */
enum redlease_key_kind {
    REDLEASE_KEY_LOCK = 1,
    REDLEASE_KEY_FENCE = 2,
    REDLEASE_KEY_QUEUE = 3,
    REDLEASE_KEY_WAITERS = 4,
    REDLEASE_KEY_HOLDERS = 5,
    REDLEASE_KEY_WEIGHTS = 6
};
/* Writes the key of resource (resource_len bytes) under prefix (NULL: none,
 * as key_prefix NULL in the client options) into buf, NUL-terminated, when size > its length; *len
 * gets the length either way (buf may be NULL when size is 0). REDLEASE_OK,
 * or REDLEASE_EINVAL for a bad prefix, name or kind. */
REDLEASE_EXTERN int redlease_key(const char *prefix, const char *resource, size_t resource_len,
                                 int kind, char *buf, size_t size, size_t *len);

/* Starts acquiring resource (o NULL: defaults). Returns REDLEASE_OK and
 * *out, or an error and then no callback runs. on_lost may be NULL.
 * REDLEASE_EINVAL for a NULL or empty resource or one longer than
 * REDLEASE_MAX_RESOURCE, or options that cannot work (the limits below
 * each field); REDLEASE_ENOTSUP for options of a newer header that set a
 * field this library does not know. */
REDLEASE_EXTERN int redlease_acquire(redlease_client *c, const char *resource,
                                     const redlease_lock_options *o,
                                     redlease_acquire_cb on_acquire, redlease_lost_cb on_lost,
                                     void *arg, redlease_lock **out);
/* The same for a binary resource name of resource_len bytes (1 to
 * REDLEASE_MAX_RESOURCE; NUL, CR, LF, 0xFF... allowed). The keys in Redis
 * are built by redlease_key() from key_prefix and those bytes; names are always passed to
 * Redis as KEYS, never spliced into a command or a script.
 * redlease_acquire(c, s, ...) is redlease_acquire_len(c, s, strlen(s), ...). */
REDLEASE_EXTERN int redlease_acquire_len(redlease_client *c, const char *resource,
                                         size_t resource_len, const redlease_lock_options *o,
                                         redlease_acquire_cb on_acquire,
                                         redlease_lost_cb on_lost, void *arg,
                                         redlease_lock **out);

/* Ends the handle (see lifetime rules). on_release(status) may be NULL:
 *   REDLEASE_OK        our key was deleted, or nothing was ever held
 *   REDLEASE_ENOTHELD  the lease was no longer ours (expired, taken, lost)
 *   other errors       Redis was not reached; the key expires by its TTL
 * Returns REDLEASE_EINVAL if lk is NULL or already being released. */
REDLEASE_EXTERN int redlease_release(redlease_lock *lk, redlease_release_cb on_release, void *arg);

/* 1 if the lease is held and locally valid now: safe to act. It is 0 while
 * the connection that confirmed it is down, and after a reconnect (a
 * failover, a Cluster redirect) until a renewal confirms it again. */
REDLEASE_EXTERN int redlease_lock_held(const redlease_lock *lk);
/* Local validity left in ms; 0 whenever redlease_lock_held() is 0. */
REDLEASE_EXTERN int64_t redlease_lock_remaining_ms(const redlease_lock *lk);
REDLEASE_EXTERN const char *redlease_lock_token(const redlease_lock *lk);
/* The full lock key (prefix "{" name "}", REDLEASE_KEY_LOCK above),
 * NUL-terminated; for a binary resource name, redlease_lock_key_len() gives
 * its length (0 if lk is NULL). */
REDLEASE_EXTERN const char *redlease_lock_key(const redlease_lock *lk);
REDLEASE_EXTERN size_t redlease_lock_key_len(const redlease_lock *lk);
/* The fencing token minted with this lease; 0 unless fencing. Strictly
 * increases across holders of one resource, also across Redis restarts
 * that lose the counter (it restarts from the server's TIME in us). */
REDLEASE_EXTERN uint64_t redlease_lock_fence(const redlease_lock *lk);
REDLEASE_EXTERN redlease_client *redlease_lock_client(const redlease_lock *lk);

/* ------------------------------------------------------------ inspection */
/* Who holds a resource and who waits for it, as Redis says now (man 3
 * redlease, INSPECTION): what redlease status shows, for a server's own
 * admin page. One read-only script reads every key of the resource at one
 * instant on each server asked: the client's server (Sentinel: its
 * primary), the Cluster node serving the resource's slot (redirects
 * followed), or under a quorum every member, each holder counted as the
 * quorum counts it. Holders and waiters past their deadline by the
 * server's clock are dead and left out. The records are what holders wrote
 * (man 3 redlease, HOLDERS), cleaned for display: shown, never trusted. */
typedef struct redlease_inspection redlease_inspection;

/* What a resource is (redlease_inspection_kind) and what a waiter waits
 * to be (redlease_waiter's kind). */
enum redlease_kind {
    REDLEASE_KIND_FREE = 0,      /* nothing holds it */
    REDLEASE_KIND_MUTEX = 1,     /* a mutex, or the exclusive holder of a shared/exclusive
                                    resource (one holder) */
    REDLEASE_KIND_SEMAPHORE = 2, /* a counting semaphore (redlease_inspection_limit) */
    REDLEASE_KIND_SHARED = 3,    /* shared holders */
    REDLEASE_KIND_UNKNOWN = 4    /* its lock key holds a value this version does not
                                    read (another version's, or not a lease): no
                                    holders are listed */
};

/* The structs below are the library's, valid only during the inspect
 * callback. They grow only at their end: struct_size is the size this
 * library fills, and a field past a caller's header is not there
 * (read a newer field only when offsetof(type, field) < struct_size).
 * Reach them by the accessors, never by pointer arithmetic. */
typedef struct redlease_holder {
    size_t struct_size;
    const char *token;      /* its token, 32 hex digits (another writer's value cleaned
                               for display, at most 64 bytes) */
    const char *label;      /* its record's label and host, cleaned; "" without a */
    const char *host;       /*   record (a writer of 0.1.0, or a lock being handed over) */
    int64_t pid;            /* 0 without a record */
    int64_t acquired_at_ms; /* when it acquired, the server's clock in ms; 0: not known */
    int64_t held_ms;        /* how long it has held, by the server's clock; -1: not known */
    int64_t ttl_ms;         /* left before its key expires; -1: no expiry */
    uint64_t fence;         /* the fence its record names (under a quorum, one member's
                               own count); 0: none */
    int64_t permits;        /* a semaphore holder's weight; 1 for other kinds */
    int servers;            /* servers that hold or admit it (under a quorum, at least
                               a majority); 1 on other topologies */
    int this_client;        /* 1: a handle of the client asking holds it */
} redlease_holder;

typedef struct redlease_waiter {
    size_t struct_size;
    const char *token;      /* as a holder's */
    const char *label;
    const char *host;
    int64_t pid;
    int64_t joined_at_ms;   /* when it joined the queue, server's clock; 0: not known */
    int64_t waiting_ms;     /* how long it has waited; -1: not known */
    int kind;               /* what it waits to be: REDLEASE_KIND_MUTEX (exclusive),
                               REDLEASE_KIND_SHARED or REDLEASE_KIND_SEMAPHORE */
    int64_t permits;        /* its weight: 1 unless a semaphore's; a semaphore waiter's
                               when it is this client's, else 0 (Redis does not keep it) */
    int servers;            /* servers whose queue has it */
    int this_client;        /* 1: a handle of the client asking */
} redlease_waiter;

/* in is valid only during the call (NULL on an error status but
 * REDLEASE_EQUORUM). */
typedef void (*redlease_inspect_cb)(const redlease_inspection *in, int status, void *arg);

/* Asks who holds resource (resource_len bytes, as redlease_acquire_len()
 * names it) and who waits for it. Returns REDLEASE_OK and cb runs exactly
 * once, from the loop (never inside this call), within command_timeout_ms:
 *   REDLEASE_OK         in says what Redis holds
 *   REDLEASE_EQUORUM    under a quorum, no holder is held by a majority of
 *                       the servers that answered, and those that did not
 *                       could make one: it cannot tell. in says what the
 *                       answers show (redlease_inspection_answered)
 *   REDLEASE_ETIMEDOUT, REDLEASE_ECONN  no answer (under a quorum: none at all)
 *   REDLEASE_EREDIS, REDLEASE_EPERM...  Redis refused (redlease_client_errstr);
 *                       REDLEASE_EPERM where the user may not run scripts
 *   REDLEASE_EKIND      its keys hold values of another type (WRONGTYPE)
 *   REDLEASE_EPROTO     an answer of another shape
 *   REDLEASE_ECANCELED  the client was freed or closed first (from free, before
 *                       it returns)
 * Or returns an error, and cb never runs: REDLEASE_EINVAL (c, cb NULL, a bad
 * name), REDLEASE_ENOMEM, REDLEASE_ECANCELED (the client is being freed or
 * closed). */
REDLEASE_EXTERN int redlease_inspect(redlease_client *c, const char *resource,
                                     size_t resource_len, redlease_inspect_cb cb, void *arg);
/* enum redlease_kind. */
REDLEASE_EXTERN int redlease_inspection_kind(const redlease_inspection *in);
/* A semaphore's limit (permits); 0 for other kinds. */
REDLEASE_EXTERN int redlease_inspection_limit(const redlease_inspection *in);
/* The resource's fence counter, the last fence minted (under a quorum, the
 * largest member's count); 0 when there is none. */
REDLEASE_EXTERN uint64_t redlease_inspection_fence_counter(const redlease_inspection *in);
/* The server's clock when it read the keys, ms (under a quorum, the first
 * member's that answered); 0: not known. */
REDLEASE_EXTERN int64_t redlease_inspection_server_ms(const redlease_inspection *in);
/* Servers asked, and servers that answered (1 and 1 but under a quorum). */
REDLEASE_EXTERN int redlease_inspection_servers(const redlease_inspection *in);
REDLEASE_EXTERN int redlease_inspection_answered(const redlease_inspection *in);
/* The live holders (a semaphore's and shared holders soonest to expire
 * first), and the holder at i (NULL past the count). */
REDLEASE_EXTERN size_t redlease_inspection_holder_count(const redlease_inspection *in);
REDLEASE_EXTERN const redlease_holder *redlease_inspection_holder(const redlease_inspection *in,
                                                                  size_t i);
/* The live queued waiters in queue order, and the waiter at i. */
REDLEASE_EXTERN size_t redlease_inspection_waiter_count(const redlease_inspection *in);
REDLEASE_EXTERN const redlease_waiter *redlease_inspection_waiter(const redlease_inspection *in,
                                                                  size_t i);

/* ---------------------------------------------------------- loop adapters */
/* An adapter gives the client one one-shot timer and watches the sockets
 * the client opens (a connection each; reconnects open new ones). Shipped:
 * <redlease/libev.h>, <redlease/libevent.h>, <redlease/libuv.h>,
 * <redlease/glib.h>. Writing one for another loop takes four functions
 * and no hiredis (docs/event-loops.md; tests/integration/loop_poll.c is
 * one), as c-ares's and libcurl's socket callbacks do:
 *   watch     watch fd for events (REDLEASE_IO_READ | REDLEASE_IO_WRITE;
 *             0: for nothing, for now). *slot is the adapter's own for
 *             that socket: NULL on the first call for it, which makes the
 *             watcher (store it there) and is the only call that may fail
 *             (return -1: that connection then fails with REDLEASE_ECONN);
 *             later calls change what it watches and return 0. The socket
 *             stays watched for that until the next call: an adapter never
 *             stops by itself (libuv stops a poll handle on an error: start
 *             it again).
 *   unwatch   the client is about to close fd: stop watching it and free
 *             what slot holds. Once per socket whose first watch
 *             succeeded; it may come from inside redlease_client_on_io()
 *             for that very socket (free the watcher as the loop allows
 *             from its own callback: libuv's uv_close, GLib's dispatch
 *             reference).
 *   timer_set arm the single timer to fire after after_ms (0 allowed),
 *             replacing any earlier setting; after_ms < 0 disarms it.
 *   detach    the client is going away (its sockets are already
 *             unwatched): disarm the timer and free the adapter's state.
 *             Called exactly once; not called if attach_loop fails.
 * None of them may call back into redlease. Keep sub-millisecond
 * precision in timer_set: after_ms / 1000.0, not / 1000.
 * When a watched socket is ready, call redlease_client_on_io(); when the
 * timer fires, redlease_client_on_timer(). Either may free the client (and
 * so call unwatch and detach): touch nothing of it, nor the socket's
 * watcher, after it returns. */
enum redlease_io_events {
    REDLEASE_IO_READ = 1,
    REDLEASE_IO_WRITE = 2
};
typedef struct redlease_loop_ops {
    int (*watch)(void *loop_data, int fd, int events, void **slot);
    void (*unwatch)(void *loop_data, int fd, void *slot);
    void (*timer_set)(void *loop_data, int64_t after_ms);
    void (*detach)(void *loop_data);
} redlease_loop_ops;

/* Binds the client to a loop and starts connecting. ops must stay valid for
 * the client's life. Once only: a second call returns REDLEASE_EINVAL. On an
 * error return, detach is not called. */
REDLEASE_EXTERN int redlease_client_attach_loop(redlease_client *c, const redlease_loop_ops *ops,
                                                void *loop_data);
/* The adapter's timer fired. */
REDLEASE_EXTERN void redlease_client_on_timer(redlease_client *c);
/* Socket fd, which the client asked to watch, is ready for events
 * (REDLEASE_IO_READ | REDLEASE_IO_WRITE). On an error or hang-up the loop
 * reports (POLLERR, POLLHUP), pass every event fd is watched for: the
 * client then reads or writes, finds the error and closes the connection.
 * Events fd is not watched for, and a descriptor the client does not
 * watch, are ignored; after unwatch, drop what the loop still has queued
 * for that watcher (the shipped loops do: a stopped watcher's events are
 * dropped): the descriptor may already be another socket's. The callbacks
 * the replies it read made due run from here, not a loop iteration later;
 * a peer gone away cannot kill the process with SIGPIPE. */
REDLEASE_EXTERN void redlease_client_on_io(redlease_client *c, int fd, int events);

/* ---------------------------------------------------------------- memory */
/* Replace malloc/realloc/free for the library's own allocations (not
 * hiredis's). Call before creating any client. NULL arguments restore libc. */
REDLEASE_EXTERN void redlease_set_allocator(void *(*malloc_fn)(size_t),
                                            void *(*realloc_fn)(void *, size_t),
                                            void (*free_fn)(void *));

#ifdef __cplusplus
}
#endif
#endif /* REDLEASE_H */
