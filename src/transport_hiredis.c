/* SPDX-License-Identifier: MIT */
/* The hiredis async binding of the transport seam: src/transport.h states
 * the contract this file keeps; docs/design.md, section 5 (Layering), shows
 * where it sits.
 *
 * With its TLS part (transport_tls.c), the only file of the project that
 * includes hiredis. It works on hiredis 0.14.1 and 1.x, which differ in
 * ways that matter here:
 *  - connect/disconnect callbacks use the const-pointer variant;
 *  - nothing frees or disconnects a context from inside onConnect or
 *    onDisconnect (0.14 crashes on it): the core closes only from outside
 *    hiredis callbacks (transport.h), and redisAsyncFree never gets NULL;
 *  - the socket's hooks (ac->ev) are ours: they ask the client's loop
 *    (src/loop.h) to watch the socket, and are set before the connect
 *    callback (which arms the write event);
 *  - we forget a context ourselves when hiredis is about to free it
 *    (onConnect with an error, onDisconnect) or when we free it;
 *  - replies are copied into rdl_reply and never freed here (hiredis frees
 *    them when the callback returns);
 *  - deadlines are the core's own on both versions (0.14 has no command
 *    timeout).
 *
 * Ownership: t->ac is the live context (NULL when closed); ac->data points
 * at t. close() frees the context synchronously; while it does, hiredis
 * calls every pending reply callback with NULL (delivered to the core, as
 * the contract wants, through t->closing_ac) and then onDisconnect, which
 * is ignored because the context is no longer t->ac.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sys/socket.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#if HIREDIS_MAJOR >= 1
#include <hiredis/sds.h>
#endif

#include "alloc.h"
#include "conn.h"
#include "loop.h"
#include "redlease.h"
#include "resp.h"
#include "transport_hiredis.h"
#include "transport_tls.h"

typedef struct rdl_hiredis {
    struct rdl_conn *conn; /* what it reports to */
    struct rdl_loop *loop;
    rdl_io io;                     /* ac's socket on the loop */
    redisAsyncContext *ac;         /* live context, or NULL */
    redisAsyncContext *closing_ac; /* being freed by close() */
    int connected;                 /* onConnect(REDIS_OK) seen for ac */
    rdl_tls *tls;                  /* TLS settings, made at the first connect; or NULL */
#if HIREDIS_MAJOR >= 1
    redisContextFuncs funcs;       /* a plaintext ac's: hiredis's, writing with MSG_NOSIGNAL */
#endif
} rdl_hiredis;

static const char *hr_errtext(const redisAsyncContext *ac, const char *dflt)
{
    if (ac->errstr != NULL && ac->errstr[0] != '\0') return ac->errstr;
    if (ac->c.err != 0 && ac->c.errstr[0] != '\0') return ac->c.errstr;
    return dflt;
}

/* One reply that is not an array (an array is OTHER here). */
static void convert_flat(const redisReply *reply, rdl_reply *r)
{
    memset(r, 0, sizeof(*r));
    switch (reply->type) {
    case REDIS_REPLY_STATUS: r->type = RDL_REPLY_STATUS; break;
    case REDIS_REPLY_ERROR: r->type = RDL_REPLY_ERROR; break;
    case REDIS_REPLY_STRING: r->type = RDL_REPLY_STRING; break;
    case REDIS_REPLY_INTEGER:
        r->type = RDL_REPLY_INTEGER;
        r->integer = reply->integer;
        return;
    case REDIS_REPLY_NIL: r->type = RDL_REPLY_NIL; return;
#ifdef REDIS_REPLY_BOOL
    case REDIS_REPLY_BOOL: /* RESP3 only; we never ask for it */
        r->type = RDL_REPLY_INTEGER;
        r->integer = reply->integer != 0 ? 1 : 0;
        return;
#endif
    default: r->type = RDL_REPLY_OTHER; return;
    }
    /* STATUS, ERROR and STRING carry text. */
    r->str = reply->str;
    r->len = reply->str != NULL ? (size_t)reply->len : 0;
}

/* How many rdl_reply the elements of an array at depth need, all levels
 * down (arrays below RDL_REPLY_MAX_DEPTH take one, as OTHER). */
static size_t count_below(const redisReply *reply, int depth)
{
    size_t n = reply->elements;
    for (size_t i = 0; i < reply->elements; i++)
        if (reply->element[i]->type == REDIS_REPLY_ARRAY && depth < RDL_REPLY_MAX_DEPTH)
            n += count_below(reply->element[i], depth + 1);
    return n;
}

/* Converts reply (at depth) into r, its elements taken from *next. */
static void convert_deep(const redisReply *reply, rdl_reply *r, rdl_reply **next, int depth)
{
    convert_flat(reply, r);
    if (reply->type != REDIS_REPLY_ARRAY || depth > RDL_REPLY_MAX_DEPTH) return;
    rdl_reply *elem = *next;
    *next += reply->elements;
    r->type = RDL_REPLY_ARRAY;
    r->elements = reply->elements;
    r->element = elem;
    for (size_t i = 0; i < reply->elements; i++) convert_deep(reply->element[i], &elem[i], next, depth + 1);
}

void rdl_hiredis_convert_reply(const redisReply *reply, rdl_reply *r, rdl_reply_buf *buf)
{
    buf->heap = NULL;
    if (reply->type != REDIS_REPLY_ARRAY) {
        convert_flat(reply, r);
        return;
    }
    size_t n = count_below(reply, 1);
    rdl_reply *next = buf->elem;
    if (n > RDL_REPLY_MAX_ELEMENTS) {
        next = buf->heap = n <= SIZE_MAX / sizeof *next ? rdl_malloc(n * sizeof *next) : NULL;
        if (!next) {
            memset(r, 0, sizeof *r);
            r->type = RDL_REPLY_OTHER;
            return;
        }
    }
    convert_deep(reply, r, &next, 1);
}

void rdl_reply_buf_free(rdl_reply_buf *buf)
{
    rdl_free(buf->heap);
    buf->heap = NULL;
}

/* Why a link ended: a TLS handshake that failed (REDLEASE_ETLS, with
 * OpenSSL's reason: hiredis's own text is often just "Success"), or
 * REDLEASE_ECONN with hiredis's text. */
static int hr_link_status(rdl_hiredis *t, const redisAsyncContext *ac, const char *dflt,
                          char *why, size_t size)
{
    int failed = rdl_tls_failed(t->tls, why, size);
    rdl_tls_forget(t->tls); /* hiredis frees the link's SSL with the context */
    if (failed) return REDLEASE_ETLS;
    snprintf(why, size, "%s", hr_errtext(ac, dflt));
    return REDLEASE_ECONN;
}

/* ---------------------------------------------------- hiredis callbacks */

static void hr_on_reply(redisAsyncContext *ac, void *reply, void *req);

/* Replies come in the order sent, and hiredis has taken this reply's
 * callback off its list: the head is the next reply's. With many commands
 * in flight each request (and what it points to) went cold since its send;
 * the next one's owner data is fetched now, and the one after that's
 * request itself, so both are at hand when their turn comes. */
static void hr_prefetch_next(rdl_hiredis *t, const redisAsyncContext *ac)
{
    const redisCallback *cb = ac->replies.head;
    if (cb == NULL || cb->fn != hr_on_reply || cb->privdata == NULL) return;
    rdl_conn_prefetch(t->conn, cb->privdata);
#if defined(__GNUC__) || defined(__clang__)
    cb = cb->next;
    if (cb != NULL && cb->privdata != NULL) __builtin_prefetch(cb->privdata, 0, 3);
#endif
}

static void hr_on_reply(redisAsyncContext *ac, void *reply, void *req)
{
    rdl_hiredis *t = (rdl_hiredis *)ac->data;
    if (t == NULL || (ac != t->ac && ac != t->closing_ac)) return;
    if (reply == NULL) { /* the connection is gone or being freed */
        rdl_conn_on_reply(t->conn, req, NULL);
        return;
    }
    hr_prefetch_next(t, ac);
    rdl_reply r;
    rdl_reply_buf buf;
    rdl_hiredis_convert_reply((const redisReply *)reply, &r, &buf);
    rdl_conn_on_reply(t->conn, req, &r);
    rdl_reply_buf_free(&buf);
}

/* A subscription's callback: hiredis calls it for the confirmation and for
 * every message, and once with NULL when the context goes. */
static void hr_on_push(redisAsyncContext *ac, void *reply, void *req)
{
    rdl_hiredis *t = (rdl_hiredis *)ac->data;
    if (t == NULL || (ac != t->ac && ac != t->closing_ac)) return;
    if (reply == NULL) {
        rdl_conn_on_reply(t->conn, req, NULL);
        return;
    }
    rdl_reply r;
    rdl_reply_buf buf;
    rdl_hiredis_convert_reply((const redisReply *)reply, &r, &buf);
    rdl_conn_on_push(t->conn, req, &r);
    rdl_reply_buf_free(&buf);
}

static void hr_on_connect(const redisAsyncContext *ac, int status)
{
    rdl_hiredis *t = (rdl_hiredis *)ac->data;
    if (t == NULL || ac != t->ac) return;
    if (status == REDIS_OK) {
        t->connected = 1;
        rdl_conn_on_connected(t->conn, REDLEASE_OK, NULL);
        return;
    }
    t->ac = NULL; /* hiredis frees it right after this returns */
    char why[256];
    int st = hr_link_status(t, ac, "connect failed", why, sizeof why);
    rdl_conn_on_connected(t->conn, st, why);
}

/* Set when hiredis reports an I/O error (a failed write among them) in this
 * thread: see hr_handle_write(). */
static _Thread_local int hr_io_failed;

static void hr_on_disconnect(const redisAsyncContext *ac, int status)
{
    rdl_hiredis *t = (rdl_hiredis *)ac->data;
    (void)status;
    if (ac->c.err == REDIS_ERR_IO) hr_io_failed = 1;
    if (t == NULL || ac != t->ac) return; /* freed by close(): not reported */
    t->ac = NULL; /* hiredis frees it right after this returns */
    t->connected = 0;
    char why[256];
    int st = hr_link_status(t, ac, "connection closed", why, sizeof why);
    rdl_conn_on_disconnected(t->conn, st, why);
}

/* ------------------------------------------------- writes without SIGPIPE */

#if HIREDIS_MAJOR >= 1
/* hiredis 1.x writes through its context's function table (its TLS layer
 * replaces it): a plaintext link writes here instead, as hiredis's own
 * redisNetWrite does but with MSG_NOSIGNAL, so a peer gone away gives EPIPE
 * and no signal, and a write costs no signal-mask system calls. */
static ssize_t hr_write_nosignal(redisContext *c)
{
    ssize_t n = send(c->fd, c->obuf, sdslen(c->obuf), MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno == EWOULDBLOCK || errno == EAGAIN || errno == EINTR) return 0; /* again later */
    c->err = REDIS_ERR_IO; /* what __redisSetError(c, REDIS_ERR_IO, NULL) sets */
    snprintf(c->errstr, sizeof c->errstr, "%s", strerror(errno));
    return -1;
}

/* A plaintext context of t writes with MSG_NOSIGNAL from now on (its
 * table is t's copy of hiredis's, which lives as long as the context). */
static void hr_no_sigpipe(rdl_hiredis *t, redisContext *c)
{
    t->funcs = *c->funcs;
    t->funcs.write = hr_write_nosignal;
    c->funcs = &t->funcs;
}

static int hr_writes_nosignal(const redisAsyncContext *ac)
{
    return ac->c.funcs && ac->c.funcs->write == hr_write_nosignal;
}
#else
static void hr_no_sigpipe(rdl_hiredis *t, redisContext *c) { (void)t, (void)c; }

/* hiredis 0.14 writes with write(2) and has no table to replace: the
 * buffer goes out here first, with MSG_NOSIGNAL, as its redisBufferWrite
 * would send it (what it does with a sent buffer included), and hiredis
 * then finds nothing to write. Only an empty buffer is safe: what is left
 * (a partial send, EAGAIN, an error hiredis must see for itself) is
 * written by hiredis under the guard. */
#define HR_OBUF_KEEP (4u << 20)

static int hr_writes_nosignal(redisAsyncContext *ac)
{
    redisContext *c = &ac->c;
    if (c->err || !(c->flags & REDIS_CONNECTED) || c->fd < 0) return 0; /* hiredis's turn */
    size_t len = sdslen(c->obuf);
    if (len == 0) return 1;
    ssize_t n = send(c->fd, c->obuf, len, MSG_NOSIGNAL);
    if (n <= 0) return 0;
    if ((size_t)n < len) {
        sdsrange(c->obuf, n, -1);
        return 0;
    }
    /* hiredis's way is to free the buffer and start a new one; a client
     * that sends in bursts (many leases renewed on one tick) would then
     * grow it again, a realloc per doubling, every burst. One of bounded
     * size is kept. */
    if (sdsalloc(c->obuf) <= HR_OBUF_KEEP) {
        sdsclear(c->obuf);
        return 1;
    }
    sds empty = sdsempty();
    if (empty) {
        sdsfree(c->obuf);
        c->obuf = empty;
    } else {
        sdsclear(c->obuf);
    }
    return 1;
}
#endif

/* Runs handle(ac) with SIGPIPE blocked in this thread, and discards the
 * SIGPIPE its failed write raised. */
static void hr_without_sigpipe(redisAsyncContext *ac, void (*handle)(redisAsyncContext *))
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    hr_io_failed = 0;
    handle(ac); /* may run callbacks, the event hook among them */
    /* Discard only a SIGPIPE our failed write raised: not one that was
     * pending before, nor one sent while no write failed. */
    if (hr_io_failed && !was_pending && sigpending(&pending) == 0 &&
        sigismember(&pending, SIGPIPE) == 1) {
        const struct timespec now = {0, 0};
        sigtimedwait(&pipe_set, NULL, &now);
    }
    /* Undo only what we did: a callback may have changed the mask since. */
    if (!sigismember(&old, SIGPIPE)) pthread_sigmask(SIG_UNBLOCK, &pipe_set, NULL);
}

/* The socket is writable: hiredis writes, except that a peer that has
 * gone away cannot kill the process with SIGPIPE (hiredis writes with
 * write(2)/send(2) without MSG_NOSIGNAL). A plaintext connection writes
 * with MSG_NOSIGNAL: on hiredis 1.x through its context's own write
 * function (hr_no_sigpipe), on 0.14 by sending the pending buffer here
 * first, as hiredis would; nothing more is done when that leaves hiredis
 * nothing to write. Otherwise (TLS; on 0.14 a partial send, a full socket
 * buffer, an error) SIGPIPE is blocked in this thread for the call and one
 * the failed write raised is discarded; a SIGPIPE that was already pending,
 * or sent while no write failed, is left alone. Either way the write fails
 * with EPIPE and hiredis reports the connection lost. May free ac. */
static void hr_handle_write(redisAsyncContext *ac)
{
    if (hr_writes_nosignal(ac)) { /* nothing hiredis writes can raise SIGPIPE */
        redisAsyncHandleWrite(ac);
        return;
    }
    hr_without_sigpipe(ac, redisAsyncHandleWrite);
}

/* -------------------------------------------------------------- reads */

/* The socket is readable: hiredis reads and dispatches, and then the
 * callbacks the replies made due run from here (rdl_conn_read_end), not
 * from the client's timer a loop iteration later. May free ac, and the
 * client. */
static void hr_handle_read(redisAsyncContext *ac)
{
    /* The transport outlives ac (it is the connection's, freed with the
     * client, and the client is never freed from inside hiredis). */
    rdl_hiredis *t = (rdl_hiredis *)ac->data;
    /* OpenSSL writes while it reads (a TLS 1.3 key update, an alert): a
     * TLS link reads under the guard. A plaintext one only reads. */
#if HIREDIS_MAJOR >= 1
    int tls = !hr_writes_nosignal(ac);
#else
    int tls = 0; /* no TLS on 0.14 */
#endif
    /* The replies of one read are one batch for the core (one timer
     * arming after them, not one per reply). */
    if (t != NULL) rdl_conn_read_begin(t->conn);
    if (tls)
        hr_without_sigpipe(ac, redisAsyncHandleRead); /* may free ac */
    else
        redisAsyncHandleRead(ac); /* may free ac */
    if (t != NULL) rdl_conn_read_end(t->conn); /* t may be gone after */
}

/* ------------------------------------------------- the socket on the loop */

/* hiredis's event hooks (ac->ev), data t: what it wants of the socket
 * becomes what the client's loop watches. */
static void hr_add_read(void *p) { rdl_io_want(&((rdl_hiredis *)p)->io, REDLEASE_IO_READ, 1); }
static void hr_del_read(void *p) { rdl_io_want(&((rdl_hiredis *)p)->io, REDLEASE_IO_READ, 0); }
static void hr_add_write(void *p) { rdl_io_want(&((rdl_hiredis *)p)->io, REDLEASE_IO_WRITE, 1); }
static void hr_del_write(void *p) { rdl_io_want(&((rdl_hiredis *)p)->io, REDLEASE_IO_WRITE, 0); }
/* hiredis frees the context (the socket is closed next). */
static void hr_cleanup(void *p) { rdl_io_close(&((rdl_hiredis *)p)->io); }

/* The adapter reports the socket ready (redlease_client_on_io). Writes
 * first: while connecting, or on an error reported for both, the write
 * handler is the one hiredis waits on, and it may free the context; the
 * read then finds it gone. */
static void hr_ready(void *self, int events)
{
    rdl_hiredis *t = (rdl_hiredis *)self; /* outlives ac: the connection's */
    redisAsyncContext *ac = t->ac;
    if (ac == NULL) return;
    if (events & REDLEASE_IO_WRITE) hr_handle_write(ac); /* may free ac */
    if ((events & REDLEASE_IO_READ) && t->ac == ac) hr_handle_read(ac); /* may free the client */
}

/* -------------------------------------------------------------- the ops */

static int hr_connect(void *self, const rdl_endpoint *ep)
{
    rdl_hiredis *t = (rdl_hiredis *)self;
    if (t->ac != NULL) return REDLEASE_EINVAL; /* close() first */
    redisAsyncContext *ac = ep->unix_path ? redisAsyncConnectUnix(ep->unix_path)
                                          : redisAsyncConnect(ep->host, ep->port);
    if (ac == NULL) return REDLEASE_ENOMEM;
    if (ac->err != 0) { /* failed at once: no socket, refused, bad address */
        rdl_conn_note_error(t->conn, hr_errtext(ac, "connect failed"));
        redisAsyncFree(ac); /* not attached, no callbacks set */
        return REDLEASE_ECONN;
    }
    /* The connection is ours alone: a program that forks and execs must
     * not hand it to its children (hiredis 0.14 leaves it inheritable). */
    int fdflags = fcntl(ac->c.fd, F_GETFD);
    if (fdflags >= 0) fcntl(ac->c.fd, F_SETFD, fdflags | FD_CLOEXEC);
    /* TCP keep-alive (hiredis's: idle 15 s, then 3 probes 5 s apart): a
     * peer gone without a reset is noticed on a link that sends nothing,
     * a Sentinel subscription above all; the stall rule covers the rest. */
    if (ep->unix_path == NULL) redisEnableKeepAlive(&ac->c);
    if (ep->tls == NULL) hr_no_sigpipe(t, &ac->c); /* TLS writes through OpenSSL: guarded */
    /* TLS starts with the socket, as hiredis's own examples do: the
     * handshake then runs inside hiredis's reads and writes. */
    if (ep->tls != NULL) {
        char why[160];
        int rc = t->tls ? REDLEASE_OK : rdl_tls_new(&t->tls, ep->tls, why, sizeof why);
        if (rc == REDLEASE_OK) rc = rdl_tls_start(t->tls, &ac->c, ep->host, ep->unix_path != NULL, why, sizeof why);
        if (rc != REDLEASE_OK) {
            rdl_conn_note_error(t->conn, why);
            redisAsyncFree(ac); /* not attached, no callbacks set */
            return rc;
        }
    }
    if (rdl_io_open(&t->io, t->loop, ac->c.fd, hr_ready, t) != REDLEASE_OK) {
        redisAsyncFree(ac); /* no hooks, no callbacks set */
        return REDLEASE_ENOMEM;
    }
    ac->data = t;
    ac->ev.addRead = hr_add_read;
    ac->ev.delRead = hr_del_read;
    ac->ev.addWrite = hr_add_write;
    ac->ev.delWrite = hr_del_write;
    ac->ev.cleanup = hr_cleanup;
    ac->ev.data = t;
    /* The hooks before the connect callback: setting it arms the write
     * event, the adapter's first watch of the socket. Neither set can fail
     * on a fresh context. */
    if (redisAsyncSetConnectCallback(ac, hr_on_connect) != REDIS_OK ||
        redisAsyncSetDisconnectCallback(ac, hr_on_disconnect) != REDIS_OK || t->io.failed) {
        ac->data = NULL;
        rdl_conn_note_error(t->conn, "the loop adapter could not watch the connection");
        redisAsyncFree(ac); /* never connected: no onDisconnect; cleanup closes io */
        return REDLEASE_ECONN;
    }
    t->ac = ac;
    t->connected = 0;
    return REDLEASE_OK;
}

static int hr_send(rdl_hiredis *t, redisCallbackFn *fn, int argc, const char **argv,
                   const size_t *lens, void *req)
{
    redisAsyncContext *ac = t->ac;
    if (ac == NULL || !t->connected || !(ac->c.flags & REDIS_CONNECTED) ||
        (ac->c.flags & (REDIS_DISCONNECTING | REDIS_FREEING)))
        return REDLEASE_ECONN;
    /* Framed here (src/resp.h says why); hiredis copies it to its buffer.
     * It must end in a NUL, as hiredis's own strings do: hiredis looks for
     * a SUBSCRIBE's channels with strchr(), which would read on past the
     * last one into whatever followed (and found a "$" there: a channel
     * that never was, whose callback ran a second time). */
    char small[512];
    size_t len = rdl_resp_len(argc, lens);
    char *cmd = len < sizeof small ? small : rdl_malloc(len + 1);
    if (cmd == NULL) return REDLEASE_ENOMEM;
    rdl_resp_write(cmd, argc, argv, lens);
    cmd[len] = '\0';
    int rc = redisAsyncFormattedCommand(ac, fn, req, cmd, len);
    if (cmd != small) rdl_free(cmd);
    return rc == REDIS_OK ? REDLEASE_OK : REDLEASE_ECONN;
}

static int hr_submit(void *self, int argc, const char **argv, const size_t *lens, void *req)
{
    return hr_send((rdl_hiredis *)self, hr_on_reply, argc, argv, lens, req);
}

static int hr_subscribe(void *self, int argc, const char **argv, const size_t *lens, void *req)
{
    return hr_send((rdl_hiredis *)self, hr_on_push, argc, argv, lens, req);
}

static void hr_close(void *self)
{
    rdl_hiredis *t = (rdl_hiredis *)self;
    redisAsyncContext *ac = t->ac;
    if (ac == NULL) return;
    t->ac = NULL;
    t->connected = 0;
    t->closing_ac = ac;
    redisAsyncFree(ac); /* every pending reply callback runs now, with NULL */
    t->closing_ac = NULL;
    rdl_tls_forget(t->tls); /* its SSL went with the context */
}

static void hr_destroy(void *self)
{
    hr_close(self); /* frees the context, and its SSL with it */
    rdl_tls_free(((rdl_hiredis *)self)->tls);
    rdl_free(self);
}

static const rdl_transport_ops hr_ops = {hr_connect, hr_submit, hr_subscribe, hr_close,
                                         hr_destroy};

int rdl_transport_hiredis_new(rdl_transport *out, struct rdl_conn *cn, struct rdl_loop *loop)
{
    rdl_hiredis *t = (rdl_hiredis *)rdl_calloc(1, sizeof(*t));
    if (t == NULL) return REDLEASE_ENOMEM;
    t->conn = cn;
    t->loop = loop;
    t->io.fd = -1; /* not open */
    out->ops = &hr_ops;
    out->self = t;
    return REDLEASE_OK;
}
