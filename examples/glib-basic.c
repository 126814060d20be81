/* SPDX-License-Identifier: MIT */
/* glib-basic: waiting for a busy lock on a GMainLoop, with fencing. A rival
 * holds the lock for 500 ms; the waiter's acquire (wait_ms 2000) waits in
 * the FIFO queue kept in Redis (the default wait mode), each busy reply
 * shown as REDLEASE_EV_CONTENDED by the event callback, and succeeds once
 * the rival's release hands it the lock. Its fencing token is larger than the
 * rival's, so storage that keeps the highest token seen can refuse a late
 * write from the rival. The release callback frees both clients and quits.
 *
 *   REDLEASE_SOCKET=/path/to/redis.sock ./glib-basic      (or REDLEASE_HOST /
 *   REDLEASE_PORT; default 127.0.0.1:6379)
 */
#include <stdio.h>
#include <stdlib.h>

#include <glib.h>
#include <redlease.h>
#include <redlease/glib.h>

#include "example-env.h"

static GMainLoop *main_loop;
static redlease_client *waiter, *rival;
static guint rival_timer;
static unsigned long long rival_fence, waiter_fence;
static int contended, released_ok;

static void finish(void)
{
    if (rival_timer) g_source_remove(rival_timer);
    redlease_client_free(waiter); /* safe from inside any callback */
    redlease_client_free(rival);
    g_main_loop_quit(main_loop); /* g_main_loop_run returns after this callback */
}

static void on_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (ev->type != REDLEASE_EV_CONTENDED) return;
    contended++;
    printf("[waiter] attempt %d: %s is busy, retrying in %lld ms\n", ev->attempt, ev->key,
           (long long)ev->retry_in_ms);
}

static void on_released(redlease_lock *lk, int status, void *arg)
{
    (void)lk, (void)arg;
    printf("[waiter] released: %s\n", redlease_strerror(status));
    released_ok = status == REDLEASE_OK;
    finish();
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk, (void)arg; /* the work below is synchronous: nothing to stop */
    printf("[waiter] lost: %s\n", redlease_lost_reason_str(reason));
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    (void)arg;
    if (status != REDLEASE_OK) {
        printf("[waiter] acquire: %s\n", example_why(lk, status));
    } else if (redlease_lock_held(lk)) { /* never act without the lease */
        waiter_fence = redlease_lock_fence(lk);
        printf("[waiter] acquired, fence %llu: writing with it\n", waiter_fence);
    } else {
        printf("[waiter] lease not safe to use, not writing\n");
    }
    int rc = redlease_release(lk, on_released, NULL); /* ends the handle in every case */
    if (rc != REDLEASE_OK) on_released(lk, rc, NULL);  /* no callback will come */
}

/* Both sides mint fencing tokens; only the waiter waits. */
static int acquire(redlease_client *c, int64_t wait_ms, redlease_acquire_cb cb,
                   redlease_lost_cb lost)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.fencing = 1;
    o.wait_ms = wait_ms;  /* 0: a single attempt */
    o.wait_retry_max_ms = 200; /* backoff cap of the attempts made before the
                                * waiter's wake-up channel is subscribed (they poll) */
    redlease_lock *lk;
    int rc = redlease_acquire(c, "inventory:sku-42", &o, cb, lost, NULL, &lk);
    if (rc != REDLEASE_OK) printf("acquire: %s\n", redlease_strerror(rc));
    return rc;
}

static gboolean rival_done(gpointer lk)
{
    rival_timer = 0; /* this source is removed by returning G_SOURCE_REMOVE */
    printf("[rival] done, releasing: %s\n", redlease_strerror(redlease_release(lk, NULL, NULL)));
    return G_SOURCE_REMOVE;
}

static void rival_acquired(redlease_lock *lk, int status, void *arg)
{
    (void)arg;
    if (status != REDLEASE_OK) {
        printf("[rival] acquire: %s\n", redlease_strerror(status));
        finish(); /* ends its handle too */
        return;
    }
    rival_fence = redlease_lock_fence(lk);
    printf("[rival] holding %s for 500 ms, fence %llu\n", redlease_lock_key(lk), rival_fence);
    rival_timer = g_timeout_add(500, rival_done, lk);
    if (acquire(waiter, 2000, on_acquired, on_lost) != REDLEASE_OK) finish(); /* it must wait */
}

static redlease_client *make_client(void)
{
    redlease_client_options o;
    redlease_client_options_init(&o);
    example_server_from_env(&o);
    redlease_client *c;
    int rc = redlease_client_new(&c, &o);
    if (rc == REDLEASE_OK) rc = redlease_glib_attach(c, NULL); /* the default context */
    if (rc == REDLEASE_OK) return c;
    fprintf(stderr, "redlease: %s\n", redlease_strerror(rc));
    exit(1);
}

int main(void)
{
    main_loop = g_main_loop_new(NULL, FALSE);
    waiter = make_client();
    rival = make_client();
    redlease_client_set_event_cb(waiter, on_event, NULL);
    if (acquire(rival, 0, rival_acquired, NULL) != REDLEASE_OK) return 1;
    g_main_loop_run(main_loop);
    g_main_loop_unref(main_loop);
    printf("done: %d busy replies, fence %llu after %llu\n", contended, waiter_fence, rival_fence);
    return contended > 0 && waiter_fence > rival_fence && released_ok ? 0 : 1;
}
