/* SPDX-License-Identifier: MIT */
/* <redlease/libev.h>: run a redlease client on a libev loop.
 *
 * Header-only, so libev's configuration (EV_MULTIPLICITY, embedded builds)
 * is the one of the program that includes it; libredlease itself links only
 * hiredis, and this header needs neither hiredis nor its headers. Usage:
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
 *  - Every socket the client opens (a connection each; reconnects open new
 *    ones) gets one ev_io watcher, started for what the client asks
 *    (redlease_loop_ops.watch) and stopped and freed when the client lets
 *    go of the socket (unwatch). When it fires, the adapter calls
 *    redlease_client_on_io().
 *  - The client's single one-shot timer is the ev_timer; when it fires, the
 *    adapter calls redlease_client_on_timer().
 *
 * Teardown guarantee: the client calls detach exactly once when it goes away
 * (redlease_client_free(), or the end of redlease_client_close()); detach
 * stops the timer and frees the state, and the client has unwatched its
 * sockets before. So after redlease_client_free() returns, or once the close
 * callback has run, the loop holds no watcher from redlease and ev_run() can
 * return for lack of work. Freeing the client from inside any redlease
 * callback is fine: the timer callback does not touch the state after
 * redlease_client_on_timer() returns.
 * One exception: freed from the event hook (redlease_client_set_event_cb,
 * which runs while a connection dispatches its replies), the client finishes tearing
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

/* One socket the client watches. */
typedef struct redlease__ev_io {
    redlease_libev *state;
    ev_io w; /* w.data points back here */
} redlease__ev_io;

/* May free the client, and with it this watcher (unwatch): touch nothing
 * after. */
static inline void redlease__ev_io_cb(EV_P_ ev_io *w, int revents) {
    redlease__ev_io *io = (redlease__ev_io *)w->data;
    int events = ((revents & EV_READ) ? REDLEASE_IO_READ : 0) | ((revents & EV_WRITE) ? REDLEASE_IO_WRITE : 0);
#if EV_MULTIPLICITY
    (void)EV_A;
#endif
    redlease_client_on_io(io->state->client, w->fd, events);
}

static inline int redlease__libev_watch(void *loop_data, int fd, int events, void **slot) {
    redlease_libev *s = (redlease_libev *)loop_data;
    redlease__ev_io *io = (redlease__ev_io *)*slot;
    int ev = ((events & REDLEASE_IO_READ) ? EV_READ : 0) | ((events & REDLEASE_IO_WRITE) ? EV_WRITE : 0);
#if EV_MULTIPLICITY
    struct ev_loop *loop = s->loop;
#endif
    if (io == NULL) {
        io = (redlease__ev_io *)malloc(sizeof(*io));
        if (io == NULL)
            return -1;
        io->state = s;
        ev_io_init(&io->w, redlease__ev_io_cb, fd, ev);
        io->w.data = io;
        *slot = io;
    } else {
        ev_io_stop(EV_A_ &io->w);
        ev_io_set(&io->w, fd, ev);
    }
    if (ev)
        ev_io_start(EV_A_ &io->w);
    return 0;
}

/* Stopping also drops an event of this watcher still pending in the loop. */
static inline void redlease__libev_unwatch(void *loop_data, int fd, void *slot) {
    redlease__ev_io *io = (redlease__ev_io *)slot;
#if EV_MULTIPLICITY
    struct ev_loop *loop = ((redlease_libev *)loop_data)->loop;
#else
    (void)loop_data;
#endif
    (void)fd;
    ev_io_stop(EV_A_ &io->w);
    free(io);
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
        redlease__libev_watch,
        redlease__libev_unwatch,
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
