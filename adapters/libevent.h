/* SPDX-License-Identifier: MIT */
/* <redlease/libevent.h>: run a redlease client on a libevent 2 event_base.
 *
 * Header-only, like <redlease/libev.h>: libredlease links only hiredis, the
 * program that includes this header links libevent, and it needs neither
 * hiredis nor its headers. Usage:
 *
 *     struct event_base *base = event_base_new();
 *     redlease_client *c;
 *     redlease_client_new(&c, &opts);
 *     if (redlease_libevent_attach(c, base) != REDLEASE_OK) ...
 *     event_base_dispatch(base);
 *
 * What it does: it allocates a small state (malloc) holding the client and
 * one timer event (event_new(base, -1, 0, ...)), and binds them with
 * redlease_client_attach_loop().
 *  - Every socket the client opens (a connection each; reconnects open new
 *    ones) gets two persistent events, one to read and one to write, added
 *    and deleted as the client asks (redlease_loop_ops.watch) and freed
 *    when it lets go of the socket (unwatch). When one fires, the adapter
 *    calls redlease_client_on_io().
 *  - The client's single one-shot timer is the timer event: evtimer_add with
 *    a struct timeval (microseconds, so 40 ms is 40 ms), evtimer_del to
 *    disarm. When it fires, the adapter calls redlease_client_on_timer().
 *
 * Teardown guarantee: the client calls detach exactly once when it goes away
 * (redlease_client_free(), or the end of redlease_client_close()); detach
 * frees the timer event and the state, after the client has unwatched its
 * sockets. So once the client is gone, the base holds no event from redlease
 * and event_base_dispatch() returns for lack of events. Freeing the client
 * from inside any redlease callback is fine: libevent allows event_free() of
 * an event from inside its own callback, and the timer callback touches
 * nothing after redlease_client_on_timer() returns.
 * One exception: freed from the event hook (redlease_client_set_event_cb,
 * which runs while a connection dispatches its replies), the client finishes tearing
 * down from a 0 ms timer on the loop's next iteration. The loop runs it by
 * itself; if you stop the loop there and destroy it, run it once more first.
 *
 * Threads: use the client only from the thread that runs the base.
 *
 * If attaching fails, nothing stays registered on the base and the state is
 * freed: REDLEASE_EINVAL (c or base NULL, or a loop already attached),
 * REDLEASE_ENOMEM, or another error of redlease_client_attach_loop().
 */
#ifndef REDLEASE_LIBEVENT_H
#define REDLEASE_LIBEVENT_H

#include <stdint.h>
#include <stdlib.h>

#include <event2/event.h>
#include <redlease.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct redlease_libevent {
    struct event_base *base;
    struct event *timer;
    redlease_client *client;
} redlease_libevent;

/* One socket the client watches. */
typedef struct redlease__event_io {
    redlease_libevent *state;
    struct event *rev, *wev;
    int events; /* REDLEASE_IO_* added to the base */
} redlease__event_io;

/* May free the client, and with it io and both events (unwatch): libevent
 * allows event_free() from inside the event's own callback, and freeing
 * the other event takes it off the active queue. */
static inline void redlease__event_cb(evutil_socket_t fd, short what, void *arg) {
    redlease__event_io *io = (redlease__event_io *)arg;
    int events = ((what & EV_READ) ? REDLEASE_IO_READ : 0) | ((what & EV_WRITE) ? REDLEASE_IO_WRITE : 0);
    redlease_client_on_io(io->state->client, (int)fd, events);
}

static inline void redlease__event_free(redlease__event_io *io) {
    if (io->rev)
        event_free(io->rev); /* also deletes it if pending */
    if (io->wev)
        event_free(io->wev);
    free(io);
}

static inline int redlease__libevent_watch(void *loop_data, int fd, int events, void **slot) {
    redlease_libevent *s = (redlease_libevent *)loop_data;
    redlease__event_io *io = (redlease__event_io *)*slot;
    if (io == NULL) {
        io = (redlease__event_io *)malloc(sizeof(*io));
        if (io == NULL)
            return -1;
        io->state = s;
        io->events = 0;
        io->rev = event_new(s->base, fd, EV_READ | EV_PERSIST, redlease__event_cb, io);
        io->wev = event_new(s->base, fd, EV_WRITE | EV_PERSIST, redlease__event_cb, io);
        if (io->rev == NULL || io->wev == NULL) {
            redlease__event_free(io); /* nothing was added to the base */
            return -1;
        }
        *slot = io;
    }
    if ((events ^ io->events) & REDLEASE_IO_READ) {
        if (events & REDLEASE_IO_READ)
            event_add(io->rev, NULL);
        else
            event_del(io->rev);
    }
    if ((events ^ io->events) & REDLEASE_IO_WRITE) {
        if (events & REDLEASE_IO_WRITE)
            event_add(io->wev, NULL);
        else
            event_del(io->wev);
    }
    io->events = events;
    return 0;
}

static inline void redlease__libevent_unwatch(void *loop_data, int fd, void *slot) {
    (void)loop_data;
    (void)fd;
    redlease__event_free((redlease__event_io *)slot);
}

static inline void redlease__libevent_timer_set(void *loop_data, int64_t after_ms) {
    redlease_libevent *s = (redlease_libevent *)loop_data;
    evtimer_del(s->timer);
    if (after_ms >= 0) {
        struct timeval tv;
        tv.tv_sec = (time_t)(after_ms / 1000);
        tv.tv_usec = (suseconds_t)(after_ms % 1000) * 1000;
        evtimer_add(s->timer, &tv);
    }
}

static inline void redlease__libevent_detach(void *loop_data) {
    redlease_libevent *s = (redlease_libevent *)loop_data;
    event_free(s->timer); /* also deletes it if pending */
    free(s);
}

static inline void redlease__libevent_fire(evutil_socket_t fd, short what, void *arg) {
    redlease_libevent *s = (redlease_libevent *)arg;
    (void)fd;
    (void)what;
    /* May free the client, and with it s (through detach): touch nothing
     * after this call. */
    redlease_client_on_timer(s->client);
}

/* The state for c on base, timer disarmed; NULL if out of memory. */
static inline redlease_libevent *redlease__libevent_new(redlease_client *c, struct event_base *base) {
    redlease_libevent *s = (redlease_libevent *)malloc(sizeof(*s));
    if (s == NULL)
        return NULL;
    s->base = base;
    s->client = c;
    s->timer = evtimer_new(base, redlease__libevent_fire, s);
    if (s->timer == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

static inline int redlease_libevent_attach(redlease_client *c, struct event_base *base) {
    static const redlease_loop_ops ops = {
        redlease__libevent_watch,
        redlease__libevent_unwatch,
        redlease__libevent_timer_set,
        redlease__libevent_detach,
    };
    redlease_libevent *s;
    int rc;

    if (c == NULL || base == NULL)
        return REDLEASE_EINVAL;
    s = redlease__libevent_new(c, base);
    if (s == NULL)
        return REDLEASE_ENOMEM;
    rc = redlease_client_attach_loop(c, &ops, s);
    if (rc != REDLEASE_OK)
        redlease__libevent_detach(s); /* the client does not call it on error */
    return rc;
}

#ifdef __cplusplus
}
#endif
#endif /* REDLEASE_LIBEVENT_H */
