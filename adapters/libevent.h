/* <redlease/libevent.h>: run a redlease client on a libevent 2 event_base.
 *
 * Header-only, like <redlease/libev.h>: libredlease links only hiredis, and
 * the program that includes this header links libevent. Usage:
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
 *  - Every hiredis context the client creates (reconnects included) is
 *    attached with hiredis's own adapter, redisLibeventAttach() from
 *    <hiredis/adapters/libevent.h>; its events belong to that context and
 *    are freed when hiredis frees it.
 *  - The client's single one-shot timer is the timer event: evtimer_add with
 *    a struct timeval (microseconds, so 40 ms is 40 ms), evtimer_del to
 *    disarm. When it fires, the adapter calls redlease_client_on_timer().
 *
 * Teardown guarantee: the client calls detach exactly once when it goes away
 * (redlease_client_free(), or the end of redlease_client_close()); detach
 * frees the timer event and the state, after the client has freed its hiredis
 * context. So once the client is gone, the base holds no event from redlease
 * and event_base_dispatch() returns for lack of events. Freeing the client
 * from inside any redlease callback is fine: libevent allows event_free() of
 * an event from inside its own callback, and the timer callback touches
 * nothing after redlease_client_on_timer() returns.
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
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libevent.h>
#include <redlease.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct redlease_libevent {
    struct event_base *base;
    struct event *timer;
    redlease_client *client;
} redlease_libevent;

static inline int redlease__libevent_attach(void *loop_data, struct redisAsyncContext *ac) {
    redlease_libevent *s = (redlease_libevent *)loop_data;
    return redisLibeventAttach(ac, s->base) == REDIS_OK ? 0 : -1;
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
        redlease__libevent_attach,
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
