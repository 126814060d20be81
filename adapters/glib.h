/* SPDX-License-Identifier: MIT */
/* <redlease/glib.h>: run a redlease client on a GLib GMainContext.
 *
 * Header-only, like <redlease/libev.h>: libredlease links only hiredis, the
 * program that includes this header links glib-2.0 (2.36 or newer), and it
 * needs neither hiredis nor its headers. Usage:
 *
 *     GMainLoop *ml = g_main_loop_new(NULL, FALSE);
 *     redlease_client *c;
 *     redlease_client_new(&c, &opts);
 *     if (redlease_glib_attach(c, NULL) != REDLEASE_OK) ...  (NULL: default context)
 *     g_main_loop_run(ml);
 *
 * What it does: it allocates a small state (malloc) holding a reference to
 * the context and one timer GSource, and binds them with
 * redlease_client_attach_loop().
 *  - Every socket the client opens (a connection each; reconnects open new
 *    ones) gets its own GSource watching it (g_source_add_unix_fd) for what
 *    the client asks (redlease_loop_ops.watch), destroyed when the client
 *    lets go of the socket (unwatch), so no reconnect leaves one behind
 *    (hiredis's own <hiredis/adapters/glib.h> never removed its source).
 *    When it fires, the adapter calls redlease_client_on_io(); an error or
 *    hang-up is reported as every event the socket is watched for, so the
 *    client finds it (left unreported, poll() would return it forever).
 *  - The client's single one-shot timer is a GSource driven by
 *    g_source_set_ready_time() on the monotonic clock (microseconds, so a
 *    40 ms deadline fires near 40 ms); -1 disarms it. One source for the
 *    client's life: re-arming allocates nothing.
 *
 * Teardown guarantee: the client calls detach exactly once when it goes away
 * (redlease_client_free(), or the end of redlease_client_close()), after it
 * has unwatched its sockets (which destroyed their sources).
 * detach destroys the timer source and drops the context reference. So once
 * the client is gone, the context holds no source from redlease. Freeing the
 * client from inside any redlease callback is fine: GLib keeps a source
 * alive while it dispatches it, and the dispatch functions touch nothing
 * after the call that may free.
 * One exception: freed from the event hook (redlease_client_set_event_cb,
 * which runs while a connection dispatches its replies), the client finishes tearing
 * down from a 0 ms timer on the loop's next iteration. The loop runs it by
 * itself; if you stop the loop there and destroy it, run it once more first.
 *
 * Threads: the context must be iterated by the thread that uses the client.
 *
 * If attaching fails, nothing stays attached and the state is freed:
 * REDLEASE_EINVAL (c NULL, or a loop already attached), REDLEASE_ENOMEM, or
 * another error of redlease_client_attach_loop().
 */
#ifndef REDLEASE_GLIB_H
#define REDLEASE_GLIB_H

#include <stdint.h>
#include <stdlib.h>

#include <glib.h>
#include <redlease.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One socket the client watches. */
typedef struct redlease__glib_io {
    GSource source;
    redlease_client *client;
    int fd;
    gpointer tag; /* from g_source_add_unix_fd */
    int events;   /* REDLEASE_IO_* watched */
} redlease__glib_io;

/* The client's timer. */
typedef struct redlease__glib_timer {
    GSource source;
    redlease_client *client;
} redlease__glib_timer;

typedef struct redlease_glib {
    GMainContext *context; /* a reference we hold */
    redlease__glib_timer *timer;
} redlease_glib;

static inline GIOCondition redlease__glib_cond(int events) {
    return (GIOCondition)(((events & REDLEASE_IO_READ) ? G_IO_IN : 0) | ((events & REDLEASE_IO_WRITE) ? G_IO_OUT : 0));
}

/* May free the client, and with it destroy this source (unwatch): GLib's
 * dispatch reference keeps it valid until we return. */
static inline gboolean redlease__glib_io_dispatch(GSource *src, GSourceFunc cb, gpointer data) {
    redlease__glib_io *io = (redlease__glib_io *)src;
    GIOCondition got = g_source_query_unix_fd(src, io->tag);
    int ev = ((got & G_IO_IN) ? REDLEASE_IO_READ : 0) | ((got & G_IO_OUT) ? REDLEASE_IO_WRITE : 0);
    (void)cb;
    (void)data;
    if (got & (G_IO_ERR | G_IO_HUP | G_IO_NVAL))
        ev = io->events; /* the client reads or writes and finds the error */
    if (ev)
        redlease_client_on_io(io->client, io->fd, ev);
    return G_SOURCE_CONTINUE;
}

static inline int redlease__glib_watch(void *loop_data, int fd, int events, void **slot) {
    static GSourceFuncs funcs = {NULL, NULL, redlease__glib_io_dispatch, NULL, NULL, NULL};
    redlease_glib *s = (redlease_glib *)loop_data;
    redlease__glib_io *io = (redlease__glib_io *)*slot;
    if (io == NULL) {
        io = (redlease__glib_io *)g_source_new(&funcs, sizeof(*io));
        io->client = s->timer->client;
        io->fd = fd;
        io->events = events;
        io->tag = g_source_add_unix_fd(&io->source, fd, redlease__glib_cond(events));
        g_source_set_name(&io->source, "redlease connection");
        g_source_attach(&io->source, s->context);
        *slot = io;
        return 0;
    }
    io->events = events;
    g_source_modify_unix_fd(&io->source, io->tag, redlease__glib_cond(events));
    return 0;
}

static inline void redlease__glib_unwatch(void *loop_data, int fd, void *slot) {
    redlease__glib_io *io = (redlease__glib_io *)slot;
    (void)loop_data;
    (void)fd;
    g_source_destroy(&io->source);
    g_source_unref(&io->source);
}

static inline gboolean redlease__glib_timer_dispatch(GSource *src, GSourceFunc cb, gpointer data) {
    redlease__glib_timer *t = (redlease__glib_timer *)src;
    (void)cb;
    (void)data;
    g_source_set_ready_time(src, -1); /* one-shot; on_timer may re-arm */
    /* May free the client and destroy this source (through detach); GLib's
     * dispatch reference keeps src valid until we return. */
    redlease_client_on_timer(t->client);
    return G_SOURCE_CONTINUE;
}

static inline void redlease__glib_timer_set(void *loop_data, int64_t after_ms) {
    redlease_glib *s = (redlease_glib *)loop_data;
    GSource *src = &s->timer->source;
    g_source_set_ready_time(src, after_ms < 0 ? -1 : g_get_monotonic_time() + after_ms * 1000);
}

static inline void redlease__glib_detach(void *loop_data) {
    redlease_glib *s = (redlease_glib *)loop_data;
    g_source_destroy(&s->timer->source);
    g_source_unref(&s->timer->source);
    g_main_context_unref(s->context);
    free(s);
}

/* The state for c on context (NULL: the default one), timer disarmed; NULL
 * if out of memory (GLib itself aborts when it runs out). */
static inline redlease_glib *redlease__glib_new(redlease_client *c, GMainContext *context) {
    static GSourceFuncs timer_funcs = {NULL, NULL, redlease__glib_timer_dispatch, NULL, NULL, NULL};
    redlease_glib *s = (redlease_glib *)malloc(sizeof(*s));
    if (s == NULL)
        return NULL;
    s->context = g_main_context_ref(context ? context : g_main_context_default());
    s->timer = (redlease__glib_timer *)g_source_new(&timer_funcs, sizeof(*s->timer));
    s->timer->client = c;
    g_source_set_name(&s->timer->source, "redlease timer");
    g_source_attach(&s->timer->source, s->context);
    return s;
}

static inline int redlease_glib_attach(redlease_client *c, GMainContext *context) {
    static const redlease_loop_ops ops = {
        redlease__glib_watch,
        redlease__glib_unwatch,
        redlease__glib_timer_set,
        redlease__glib_detach,
    };
    redlease_glib *s;
    int rc;

    if (c == NULL)
        return REDLEASE_EINVAL;
    s = redlease__glib_new(c, context);
    if (s == NULL)
        return REDLEASE_ENOMEM;
    rc = redlease_client_attach_loop(c, &ops, s);
    if (rc != REDLEASE_OK)
        redlease__glib_detach(s); /* detach is not called on error */
    return rc;
}

#ifdef __cplusplus
}
#endif
#endif /* REDLEASE_GLIB_H */
