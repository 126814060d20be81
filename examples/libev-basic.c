/* SPDX-License-Identifier: MIT */
/* libev-basic: acquire a lease, work while it is renewed, react to loss,
 * release. A second client tries the same resource meanwhile and is told it
 * is busy.
 *
 *   REDLEASE_SOCKET=/path/to/redis.sock ./libev-basic     (or REDLEASE_HOST /
 *   REDLEASE_PORT; default 127.0.0.1:6379)
 */
#include <stdio.h>
#include <stdlib.h>

#include <redlease.h>
#include <redlease/libev.h>

#include "example-env.h"

static struct ev_loop *loop;
static redlease_client *client, *rival;
static ev_timer work_timer;
static int steps_done;

static void log_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c;
    const char *who = arg;
    switch (ev->type) {
    case REDLEASE_EV_ACQUIRED:
        printf("[%s] acquired %s (round trip %lld ms)\n", who, ev->key, (long long)ev->rtt_ms);
        break;
    case REDLEASE_EV_RENEWED:
        printf("[%s] renewed %s: %lld ms of validity left\n", who, ev->key,
               (long long)ev->remaining_ms);
        break;
    case REDLEASE_EV_RENEW_FAILED:
        printf("[%s] renewal failed (%s), retrying in %lld ms\n", who,
               redlease_strerror(ev->status), (long long)ev->retry_in_ms);
        break;
    case REDLEASE_EV_DISCONNECTED:
        printf("[%s] connection: %s\n", who, ev->detail ? ev->detail : redlease_strerror(ev->status));
        break;
    default:
        break;
    }
}

static void on_released(redlease_lock *lk, int status, void *arg)
{
    (void)lk, (void)arg;
    printf("[worker] released: %s\n", redlease_strerror(status));
    redlease_client_free(client); /* safe from inside a callback */
    redlease_client_free(rival);
}

static void work_step(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l, (void)revents;
    redlease_lock *lk = w->data;
    if (!redlease_lock_held(lk)) { /* never act without the lease */
        printf("[worker] lease not safe to use: pausing this step\n");
        return;
    }
    printf("[worker] step %d (fence %llu)\n", ++steps_done,
           (unsigned long long)redlease_lock_fence(lk));
    if (steps_done == 5) {
        ev_timer_stop(loop, &work_timer);
        redlease_release(lk, on_released, NULL);
    }
}

static void on_rival(redlease_lock *lk, int status, void *arg)
{
    (void)arg;
    printf("[rival] acquire: %s\n", redlease_strerror(status));
    redlease_release(lk, NULL, NULL);
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk, (void)arg;
    printf("[worker] LOST the lease: %s; stopping work\n", redlease_lost_reason_str(reason));
    ev_timer_stop(loop, &work_timer);
    redlease_release(lk, on_released, NULL);
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    (void)arg;
    if (status != REDLEASE_OK) {
        printf("[worker] acquire failed: %s\n", example_why(lk, status));
        redlease_release(lk, on_released, NULL);
        return;
    }
    printf("[worker] holding %s with token %.8s...\n", redlease_lock_key(lk), redlease_lock_token(lk));
    /* Work in steps; the lease renews itself every ttl/3 meanwhile. */
    work_timer.data = lk;
    ev_timer_start(loop, &work_timer);

    redlease_lock *other;
    redlease_acquire(rival, "report:daily", NULL, on_rival, NULL, NULL, &other);
}

static redlease_client *make_client(const char *name)
{
    redlease_client_options o;
    redlease_client_options_init(&o);
    example_server_from_env(&o);
    redlease_client *c;
    int rc = redlease_client_new(&c, &o);
    if (rc == REDLEASE_OK) rc = redlease_libev_attach(c, loop);
    if (rc != REDLEASE_OK) {
        fprintf(stderr, "redlease: %s\n", redlease_strerror(rc));
        exit(1);
    }
    redlease_client_set_event_cb(c, log_event, (void *)name);
    return c;
}

int main(void)
{
    loop = EV_DEFAULT;
    client = make_client("worker");
    rival = make_client("rival");
    ev_timer_init(&work_timer, work_step, 0.3, 0.3);

    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = 900;     /* short, so renewals show within the demo */
    o.wait_ms = 2000;   /* wait up to 2 s if someone else holds it */
    o.fencing = 1;      /* mint a fencing token for the storage layer */
    redlease_lock *lk;
    int rc = redlease_acquire(client, "report:daily", &o, on_acquired, on_lost, NULL, &lk);
    if (rc != REDLEASE_OK) {
        fprintf(stderr, "acquire: %s\n", redlease_strerror(rc));
        return 1;
    }
    ev_run(loop, 0); /* returns once both clients are freed */
    printf("done: %d steps under the lease\n", steps_done);
    return steps_done == 5 ? 0 : 1;
}
