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
 *  - Every hiredis context the client creates (reconnects included) is
 *    attached with hiredis's own adapter, redisLibevAttach() from
 *    <hiredis/adapters/libev.h>; its I/O watchers (and on hiredis 1.x its
 *    timer) belong to that context and go away when hiredis frees it.
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
#include <hiredis/adapters/libev.h>
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

static inline int redlease__libev_attach(void *loop_data, struct redisAsyncContext *ac) {
    redlease_libev *s = (redlease_libev *)loop_data;
#if EV_MULTIPLICITY
    struct ev_loop *loop = s->loop;
#else
    (void)s;
#endif
    return redisLibevAttach(EV_A_ ac) == REDIS_OK ? 0 : -1;
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
