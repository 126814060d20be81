/* SPDX-License-Identifier: MIT */
/* The integration suite on GLib, through <redlease/glib.h>, on a private
 * GMainContext (not the default one). */
#include <redlease/glib.h>

#include "testloop.h"

const char testloop_name[] = "glib";
static GMainContext *ctx;
static int baseline_fds; /* what an empty context polls: its own wakeup fd */

static gboolean on_tick(gpointer arg)
{
    (void)arg;
    return G_SOURCE_REMOVE;
}

/* A non-blocking iteration by hand, to see what the context would wait on:
 * the number of fds, and whether any source has a timeout. */
static int poll_set(int *timeout)
{
    GPollFD fds[64];
    gint prio, n;
    g_main_context_acquire(ctx);
    g_main_context_prepare(ctx, &prio);
    n = g_main_context_query(ctx, prio, timeout, fds, 64);
    g_main_context_check(ctx, prio, fds, n > 64 ? 64 : n);
    g_main_context_dispatch(ctx);
    g_main_context_release(ctx);
    return n;
}

void testloop_init(void)
{
    int timeout;
    ctx = g_main_context_new();
    baseline_fds = poll_set(&timeout);
}

int testloop_attach(redlease_client *c) { return redlease_glib_attach(c, ctx); }

void testloop_run_once(int max_ms)
{
    GSource *t = g_timeout_source_new((guint)max_ms);
    g_source_set_callback(t, on_tick, NULL, NULL);
    g_source_attach(t, ctx);
    g_main_context_iteration(ctx, TRUE);
    g_source_destroy(t);
    g_source_unref(t);
}

/* Sources attached and not destroyed. Ids are handed out in order per
 * context, so a new source's id bounds them all. */
static int live_sources(void)
{
    GSource *probe = g_idle_source_new();
    guint last = g_source_attach(probe, ctx);
    int n = 0;
    g_source_destroy(probe);
    g_source_unref(probe);
    for (guint id = 1; id < last; id++) n += g_main_context_find_source_by_id(ctx, id) != NULL;
    return n;
}

/* GLib has no "returns when empty" run: the context is empty when no source
 * is attached (an idle one left behind, like hiredis's own GLib adapter
 * leaves after each connection, would only waste memory and time), and it
 * would poll only its own wakeup fd with no timeout. */
int testloop_pending(void)
{
    int timeout = 0;
    int n = poll_set(&timeout);
    return n != baseline_fds || timeout != -1 || live_sources() != 0;
}

void testloop_run_to_end(void) {}

void testloop_destroy(void) { g_main_context_unref(ctx); }

void *testloop_timer_new(redlease_client *probe) { return redlease__glib_new(probe, ctx); }
void testloop_timer_set(void *t, int64_t after_ms) { redlease__glib_timer_set(t, after_ms); }
void testloop_timer_free(void *t) { redlease__glib_detach(t); }
