/* SPDX-License-Identifier: MIT */
/* <redlease/libuv.h>: run a redlease client on a libuv loop.
 *
 * Header-only, like <redlease/libev.h>: libredlease links only hiredis, the
 * program that includes this header links libuv, and it needs neither
 * hiredis nor its headers. Usage:
 *
 *     redlease_client *c;
 *     redlease_client_new(&c, &opts);
 *     if (redlease_libuv_attach(c, uv_default_loop()) != REDLEASE_OK) ...
 *     uv_run(uv_default_loop(), UV_RUN_DEFAULT);
 *
 * What it does: it allocates a small state (malloc) holding the client and
 * one uv_timer_t, and binds them with redlease_client_attach_loop().
 *  - Every socket the client opens (a connection each; reconnects open new
 *    ones) gets a uv_poll_t, started for what the client asks
 *    (redlease_loop_ops.watch), closed (uv_close) when it lets go of the
 *    socket (unwatch) and freed in its close callback. When it fires, the
 *    adapter calls redlease_client_on_io(). On a poll error (libuv reports
 *    a socket error or reset as UV_EBADF and stops the handle) it starts
 *    the handle again and reports every event the socket is watched for,
 *    so the client reads or writes, finds the error and closes the
 *    connection (a read may first get the data sent before a reset, and
 *    the socket must stay watched for the read that finds it): hiredis's
 *    own libuv adapter ignored the error on 0.14, and a reset connection
 *    was never read, never freed and never reconnected.
 *  - The client's single one-shot timer is the uv_timer_t (milliseconds,
 *    repeat 0). Arming first refreshes the loop's cached time
 *    (uv_update_time), so a timer armed late in a long loop iteration still
 *    fires after_ms from now, not from the start of the iteration.
 *
 * Teardown guarantee: the client calls detach exactly once when it goes away
 * (redlease_client_free(), or the end of redlease_client_close()). detach
 * closes the timer with uv_close(), and the state is freed in the close
 * callback, never before (libuv owns a handle until then). So once the
 * client is gone and the loop has run its close callbacks, no handle of
 * redlease is left and uv_run(UV_RUN_DEFAULT) returns by itself; a loop being
 * shut down with uv_loop_close() must be run once more first, as usual with
 * libuv. Freeing the client from inside any redlease callback is fine: the
 * timer callback touches nothing after redlease_client_on_timer() returns.
 * One exception: freed from the event hook (redlease_client_set_event_cb,
 * which runs while a connection dispatches its replies), the client finishes tearing
 * down from a 0 ms timer on the loop's next iteration. The loop runs it by
 * itself; if you stop the loop there and destroy it, run it once more first.
 *
 * Threads: use the client only from the thread that runs the loop.
 *
 * Strict C99 (-std=c99): <uv.h> needs POSIX declarations that plain C99
 * hides; define _POSIX_C_SOURCE (200809L) before the first #include, or
 * build with -std=gnu99 or later.
 *
 * If attaching fails, nothing stays registered on the loop: REDLEASE_EINVAL
 * (c or loop NULL, or a loop already attached), REDLEASE_ENOMEM, or another
 * error of redlease_client_attach_loop(). The timer handle is then closed and
 * its memory is freed by the loop's next iteration.
 */
#ifndef REDLEASE_LIBUV_H
#define REDLEASE_LIBUV_H

#include <stdint.h>
#include <stdlib.h>

#include <uv.h>
#include <redlease.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct redlease_libuv {
    uv_loop_t *loop;
    uv_timer_t timer; /* timer.data points back here */
    redlease_client *client;
} redlease_libuv;

/* One socket the client watches. */
typedef struct redlease__uv_io {
    uv_poll_t poll; /* poll.data points back here */
    redlease_libuv *state;
    int fd;
    int events;     /* REDLEASE_IO_* watched */
} redlease__uv_io;

static inline int redlease__uv_events(int events) {
    return ((events & REDLEASE_IO_READ) ? UV_READABLE : 0) | ((events & REDLEASE_IO_WRITE) ? UV_WRITABLE : 0);
}

/* May free the client, and with it close this handle (unwatch): libuv
 * then calls no callback of it again, and frees it in the close callback. */
static inline void redlease__uv_io_cb(uv_poll_t *h, int status, int events) {
    redlease__uv_io *io = (redlease__uv_io *)h->data;
    int ev = ((events & UV_READABLE) ? REDLEASE_IO_READ : 0) | ((events & UV_WRITABLE) ? REDLEASE_IO_WRITE : 0);
    /* On an error libuv has stopped the handle. The client finds the error
     * by reading or writing, and closes the connection; but a read may
     * first get data that came before a reset, and no error: the client
     * still wants the socket watched, and has no way to know that libuv
     * stopped. So the handle starts again (a lasting error is reported
     * again, until the read that finds it). */
    if (status < 0) {
        ev = io->events;
        if (io->events)
            uv_poll_start(&io->poll, redlease__uv_events(io->events), redlease__uv_io_cb);
    }
    redlease_client_on_io(io->state->client, io->fd, ev);
}

static inline void redlease__uv_free_on_close(uv_handle_t *h) {
    free(h->data);
}

static inline int redlease__libuv_watch(void *loop_data, int fd, int events, void **slot) {
    redlease_libuv *s = (redlease_libuv *)loop_data;
    redlease__uv_io *io = (redlease__uv_io *)*slot;
    int uv = redlease__uv_events(events);
    if (io == NULL) {
        io = (redlease__uv_io *)malloc(sizeof(*io));
        if (io == NULL)
            return -1;
        if (uv_poll_init_socket(s->loop, &io->poll, fd) != 0) {
            free(io); /* not registered with the loop: no close needed */
            return -1;
        }
        io->poll.data = io;
        io->state = s;
        io->fd = fd;
        *slot = io;
    }
    io->events = events;
    if (uv)
        uv_poll_start(&io->poll, uv, redlease__uv_io_cb);
    else
        uv_poll_stop(&io->poll);
    return 0;
}

static inline void redlease__libuv_unwatch(void *loop_data, int fd, void *slot) {
    redlease__uv_io *io = (redlease__uv_io *)slot;
    (void)loop_data;
    (void)fd;
    uv_close((uv_handle_t *)&io->poll, redlease__uv_free_on_close);
}

static inline void redlease__libuv_fire(uv_timer_t *t) {
    redlease_libuv *s = (redlease_libuv *)t->data;
    /* May free the client and close the timer (through detach); s itself
     * lives until the close callback, but nothing here needs it after. */
    redlease_client_on_timer(s->client);
}

static inline void redlease__libuv_timer_set(void *loop_data, int64_t after_ms) {
    redlease_libuv *s = (redlease_libuv *)loop_data;
    if (after_ms < 0) {
        uv_timer_stop(&s->timer);
        return;
    }
    uv_update_time(s->loop);
    uv_timer_start(&s->timer, redlease__libuv_fire, (uint64_t)after_ms, 0);
}

static inline void redlease__libuv_detach(void *loop_data) {
    redlease_libuv *s = (redlease_libuv *)loop_data;
    uv_close((uv_handle_t *)&s->timer, redlease__uv_free_on_close);
}

/* The state for c on loop, timer disarmed; NULL if out of memory. */
static inline redlease_libuv *redlease__libuv_new(redlease_client *c, uv_loop_t *loop) {
    redlease_libuv *s = (redlease_libuv *)malloc(sizeof(*s));
    if (s == NULL)
        return NULL;
    s->loop = loop;
    s->client = c;
    uv_timer_init(loop, &s->timer); /* cannot fail: it only fills in the handle */
    s->timer.data = s;
    return s;
}

static inline int redlease_libuv_attach(redlease_client *c, uv_loop_t *loop) {
    static const redlease_loop_ops ops = {
        redlease__libuv_watch,
        redlease__libuv_unwatch,
        redlease__libuv_timer_set,
        redlease__libuv_detach,
    };
    redlease_libuv *s;
    int rc;

    if (c == NULL || loop == NULL)
        return REDLEASE_EINVAL;
    s = redlease__libuv_new(c, loop);
    if (s == NULL)
        return REDLEASE_ENOMEM;
    rc = redlease_client_attach_loop(c, &ops, s);
    if (rc != REDLEASE_OK)
        redlease__libuv_detach(s); /* the client does not call it on error */
    return rc;
}

#ifdef __cplusplus
}
#endif
#endif /* REDLEASE_LIBUV_H */
