/* SPDX-License-Identifier: MIT */
/* libuv-basic: a long job that keeps a short lease alive by renewal, and a
 * graceful shutdown. The lease has a 600 ms TTL, renewed every 200 ms, while
 * 8 work steps run on a uv_timer (about 2 s). When the job is done, or on
 * SIGINT, redlease_client_close() cancels what is pending and deletes the
 * held key (on_lost(CLOSED) tells the job); its callback closes our own
 * handles, so uv_run() returns by itself and uv_loop_close() succeeds.
 *
 *   REDLEASE_SOCKET=/path/to/redis.sock ./libuv-basic     (or REDLEASE_HOST /
 *   REDLEASE_PORT; default 127.0.0.1:6379)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <uv.h>
#include <redlease.h>
#include <redlease/libuv.h>

#include "example-env.h"

#define STEPS 8

static uv_loop_t loop;
static uv_timer_t step_timer;
static uv_signal_t sigint;
static redlease_client *client;
static redlease_lock *lease;
static int steps, renewals, closing, interrupted;

static void on_closed(redlease_client *c, void *arg)
{
    (void)c, (void)arg; /* the client is gone once this returns */
    uv_close((uv_handle_t *)&step_timer, NULL);
    uv_close((uv_handle_t *)&sigint, NULL);
}

static void shut_down(const char *why)
{
    if (closing++) return;
    printf("[job] shutting down: %s\n", why);
    uv_timer_stop(&step_timer); /* no step after this: the lease is going */
    redlease_client_close(client, on_closed, NULL); /* ends every handle */
}

static void on_sigint(uv_signal_t *s, int signum)
{
    (void)s, (void)signum;
    interrupted = 1;
    shut_down("SIGINT");
}

static void work_step(uv_timer_t *t)
{
    (void)t;
    if (!redlease_lock_held(lease)) { /* never act without the lease */
        printf("[job] lease not safe to use: pausing this step\n");
        return;
    }
    redlease_stats st;
    redlease_client_stats(client, &st);
    renewals = (int)st.renewed;
    printf("[job] step %d/%d: %lld ms of lease left, %d renewals so far\n", ++steps, STEPS,
           (long long)redlease_lock_remaining_ms(lease), renewals);
    if (steps == STEPS) shut_down("job complete");
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk, (void)arg;
    printf("[job] lease ended: %s\n", redlease_lost_reason_str(reason));
    shut_down("lease lost"); /* at once: another worker may own it now */
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    (void)arg;
    if (status == REDLEASE_ECANCELED) return; /* closed before it was ours */
    if (status != REDLEASE_OK) {
        printf("[job] acquire: %s\n", example_why(lk, status));
        shut_down("no lease");
        return;
    }
    printf("[job] holding %s\n", redlease_lock_key(lk));
    uv_timer_start(&step_timer, work_step, 250, 250);
}

static redlease_client *make_client(void)
{
    redlease_client_options o;
    redlease_client_options_init(&o);
    example_server_from_env(&o);
    redlease_client *c;
    int rc = redlease_client_new(&c, &o);
    if (rc == REDLEASE_OK) rc = redlease_libuv_attach(c, &loop);
    if (rc == REDLEASE_OK) return c;
    fprintf(stderr, "redlease: %s\n", redlease_strerror(rc));
    exit(1);
}

int main(void)
{
    if (uv_loop_init(&loop) != 0 || uv_timer_init(&loop, &step_timer) != 0 ||
        uv_signal_init(&loop, &sigint) != 0 || uv_signal_start(&sigint, on_sigint, SIGINT) != 0)
        return 1;
    uv_unref((uv_handle_t *)&sigint); /* watching for Ctrl-C is no reason to keep running */
    client = make_client();
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = 600;   /* a crashed worker frees the job fast; renewals (ttl/3) keep it ours */
    o.wait_ms = 1000; /* another worker may be finishing: wait up to 1 s */
    int rc = redlease_acquire(client, "job:reindex", &o, on_acquired, on_lost, NULL, &lease);
    if (rc != REDLEASE_OK) {
        fprintf(stderr, "acquire: %s\n", redlease_strerror(rc));
        shut_down("no lease");
    }
    uv_run(&loop, UV_RUN_DEFAULT); /* returns once the client and our handles are closed */
    if ((rc = uv_loop_close(&loop)) != 0) {
        fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
        return 1;
    }
    printf("done: %d/%d steps, %d renewals\n", steps, STEPS, renewals);
    return interrupted ? 130 : steps == STEPS ? 0 : 1;
}
