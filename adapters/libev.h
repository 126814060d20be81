/* SPDX-License-Identifier: MIT */
/* <redlease/libev.h>: run a redlease client on a libev loop.
 *
 * Header-only, so libev's configuration (EV_MULTIPLICITY, embedded builds)
 * is the one of the program that includes it; libredlease itself links only
 * hiredis. Usage:
 *
 *     redlease_client *c;
 *     redlease_client_new(&c, &opts);
 *     if (redlease_libev_attach(c, EV_DEFAULT) != REDLEASE_OK) ...
 *     ev_run(EV_DEFAULT, 0);
 *
 * With EV_MULTIPLICITY 0 (a single global loop) pass NULL as the loop; it is
 * ignored.
 *
 * What it does: it allocates a small state (malloc) holding the loop, one
 * ev_timer and the client, and binds them with redlease_client_attach_loop().
 *  - Every hiredis context the client creates (reconnects included) gets
 *    two ev_io watchers on its socket, stopped and freed when hiredis frees
 *    the context. Like hiredis's own <hiredis/adapters/libev.h>, except that
 *    writes go through redlease_async_handle_write(), so a server that went
 *    away cannot kill the process with SIGPIPE, and reads through
 *    redlease_async_handle_read(), so the callbacks the replies made due
 *    run at once.
 *  - The client's single one-shot timer is the ev_timer; when it fires, the
 *    adapter calls redlease_client_on_timer().
 *
 * Teardown guarantee: the client calls detach exactly once when it goes away
 * (redlease_client_free(), or the end of redlease_client_close()); detach
 * stops the timer and frees the state, and the client frees its hiredis
 * context first. So after redlease_client_free() returns, or once the close
 * callback has run, the loop holds no watcher from redlease and ev_run() can
 * return for lack of work. Freeing the client from inside any redlease
 * callback is fine: the timer callback does not touch the state after
 * redlease_client_on_timer() returns.
 * One exception: freed from the event hook (redlease_client_set_event_cb,
 * which runs while hiredis is dispatching), the client finishes tearing
 * down from a 0 ms timer on the loop's next iteration. The loop runs it by
 * itself; if you stop the loop there and destroy it, run it once more first.
 *
 * If attaching fails, nothing stays registered on the loop and the state is
 * freed: REDLEASE_EINVAL (c NULL, or loop NULL with EV_MULTIPLICITY),
 * REDLEASE_ENOMEM, or the error of redlease_client_attach_loop() (for
 * example REDLEASE_EINVAL if a loop is already attached).
 */
#ifndef REDLEASE_LIBEV_H
#define REDLEASE_LIBEV_H

#include <stdint.h>
#include <stdlib.h>

#include <ev.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <redlease.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop;

typedef struct redlease_libev {
    struct ev_loop *loop; /* NULL with EV_MULTIPLICITY 0 */
    ev_timer timer;
    redlease_client *client;
} redlease_libev;

/* The socket of one hiredis connection. */
typedef struct redlease__ev_io {
    struct ev_loop *loop; /* NULL with EV_MULTIPLICITY 0 */
    ev_io rev, wev;       /* .data points back here */
    redisAsyncContext *ac;
} redlease__ev_io;

/* Either handler may make hiredis free ac, and with it io (cleanup stops
 * both watchers, which also drops a pending event of the other). */
static inline void redlease__ev_read(EV_P_ ev_io *w, int revents) {
#if EV_MULTIPLICITY
    (void)EV_A;
#endif
    (void)revents;
    redlease_async_handle_read(((redlease__ev_io *)w->data)->ac);
}
static inline void redlease__ev_write(EV_P_ ev_io *w, int revents) {
#if EV_MULTIPLICITY
    (void)EV_A;
#endif
    (void)revents;
    redlease_async_handle_write(((redlease__ev_io *)w->data)->ac);
}

static inline void redlease__ev_want(redlease__ev_io *io, ev_io *w, int on) {
#if EV_MULTIPLICITY
    struct ev_loop *loop = io->loop;
#else
    (void)io;
#endif
    if (on)
        ev_io_start(EV_A_ w);
    else
        ev_io_stop(EV_A_ w);
}
static inline void redlease__ev_add_read(void *p) { redlease__ev_want((redlease__ev_io *)p, &((redlease__ev_io *)p)->rev, 1); }
static inline void redlease__ev_del_read(void *p) { redlease__ev_want((redlease__ev_io *)p, &((redlease__ev_io *)p)->rev, 0); }
static inline void redlease__ev_add_write(void *p) { redlease__ev_want((redlease__ev_io *)p, &((redlease__ev_io *)p)->wev, 1); }
static inline void redlease__ev_del_write(void *p) { redlease__ev_want((redlease__ev_io *)p, &((redlease__ev_io *)p)->wev, 0); }

static inline void redlease__ev_cleanup(void *p) {
    redlease__ev_io *io = (redlease__ev_io *)p;
    redlease__ev_want(io, &io->rev, 0);
    redlease__ev_want(io, &io->wev, 0);
    free(io);
}

static inline int redlease__libev_attach(void *loop_data, struct redisAsyncContext *ac) {
    redlease_libev *s = (redlease_libev *)loop_data;
    redlease__ev_io *io;

    if (ac->ev.data != NULL)
        return -1;
    io = (redlease__ev_io *)malloc(sizeof(*io));
    if (io == NULL)
        return -1;
    io->loop = s->loop;
    io->ac = ac;
    ev_io_init(&io->rev, redlease__ev_read, ac->c.fd, EV_READ);
    ev_io_init(&io->wev, redlease__ev_write, ac->c.fd, EV_WRITE);
    io->rev.data = io->wev.data = io;
    ac->ev.addRead = redlease__ev_add_read;
    ac->ev.delRead = redlease__ev_del_read;
    ac->ev.addWrite = redlease__ev_add_write;
    ac->ev.delWrite = redlease__ev_del_write;
    ac->ev.cleanup = redlease__ev_cleanup;
    ac->ev.data = io;
    return 0;
}

static inline void redlease__libev_timer_set(void *loop_data, int64_t after_ms) {
    redlease_libev *s = (redlease_libev *)loop_data;
#if EV_MULTIPLICITY
    struct ev_loop *loop = s->loop;
#endif
    ev_timer_stop(EV_A_ &s->timer);
    if (after_ms >= 0) {
        /* 1000.0: keep sub-millisecond precision out of integer division. */
        ev_timer_set(&s->timer, (ev_tstamp)after_ms / 1000.0, 0.);
        ev_timer_start(EV_A_ &s->timer);
    }
}

static inline void redlease__libev_detach(void *loop_data) {
    redlease_libev *s = (redlease_libev *)loop_data;
#if EV_MULTIPLICITY
    struct ev_loop *loop = s->loop;
#endif
    ev_timer_stop(EV_A_ &s->timer);
    free(s);
}

static inline void redlease__libev_fire(EV_P_ ev_timer *w, int revents) {
    redlease_libev *s = (redlease_libev *)w->data;
#if EV_MULTIPLICITY
    (void)EV_A;
#endif
    (void)revents;
    /* May free the client, and with it s (through detach): touch nothing
     * after this call. */
    redlease_client_on_timer(s->client);
}

/* The state for c on loop, timer disarmed; NULL if out of memory. */
static inline redlease_libev *redlease__libev_new(redlease_client *c, struct ev_loop *loop) {
    redlease_libev *s = (redlease_libev *)malloc(sizeof(*s));
    if (s == NULL)
        return NULL;
#if EV_MULTIPLICITY
    s->loop = loop;
#else
    (void)loop;
    s->loop = NULL;
#endif
    s->client = c;
    ev_timer_init(&s->timer, redlease__libev_fire, 0., 0.);
    s->timer.data = s;
    return s;
}

static inline int redlease_libev_attach(redlease_client *c, struct ev_loop *loop) {
    static const redlease_loop_ops ops = {
        redlease__libev_attach,
        redlease__libev_timer_set,
        redlease__libev_detach,
    };
    redlease_libev *s;
    int rc;

    if (c == NULL)
        return REDLEASE_EINVAL;
#if EV_MULTIPLICITY
    if (loop == NULL)
        return REDLEASE_EINVAL;
#endif
    s = redlease__libev_new(c, loop);
    if (s == NULL)
        return REDLEASE_ENOMEM;
    rc = redlease_client_attach_loop(c, &ops, s);
    if (rc != REDLEASE_OK)
        redlease__libev_detach(s); /* the client does not call it on error */
    return rc;
}

#ifdef __cplusplus
}
#endif
#endif /* REDLEASE_LIBEV_H */
