/* <redlease/libuv.h>: run a redlease client on a libuv loop.
 *
 * Header-only, like <redlease/libev.h>: libredlease links only hiredis, and
 * the program that includes this header links libuv. Usage:
 *
 *     redlease_client *c;
 *     redlease_client_new(&c, &opts);
 *     if (redlease_libuv_attach(c, uv_default_loop()) != REDLEASE_OK) ...
 *     uv_run(uv_default_loop(), UV_RUN_DEFAULT);
 *
 * What it does: it allocates a small state (malloc) holding the client and
 * one uv_timer_t, and binds them with redlease_client_attach_loop().
 *  - Every hiredis context the client creates (reconnects included) is
 *    attached with hiredis's own adapter, redisLibuvAttach() from
 *    <hiredis/adapters/libuv.h>: a uv_poll_t per context that hiredis closes
 *    (uv_close) when it frees the context.
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
 *
 * Threads: use the client only from the thread that runs the loop.
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
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>
#include <redlease.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct redlease_libuv {
    uv_loop_t *loop;
    uv_timer_t timer; /* timer.data points back here */
    redlease_client *client;
} redlease_libuv;

static inline int redlease__libuv_attach(void *loop_data, struct redisAsyncContext *ac) {
    redlease_libuv *s = (redlease_libuv *)loop_data;
    return redisLibuvAttach(ac, s->loop) == REDIS_OK ? 0 : -1;
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

static inline void redlease__libuv_closed(uv_handle_t *h) {
    free(h->data);
}

static inline void redlease__libuv_detach(void *loop_data) {
    redlease_libuv *s = (redlease_libuv *)loop_data;
    uv_close((uv_handle_t *)&s->timer, redlease__libuv_closed);
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
        redlease__libuv_attach,
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
