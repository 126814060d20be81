/* SPDX-License-Identifier: MIT */
/* worker: a long job that keeps its lease by renewal and stops the moment
 * the lease is lost.
 *
 *   worker [RESOURCE [STEPS]]      (default "job:nightly", 20 steps)
 *   REDLEASE_SOCKET=/path/to/redis.sock, or REDLEASE_HOST / REDLEASE_PORT
 *   (default 127.0.0.1:6379)
 *
 * The lease has a 600 ms TTL, so it renews every 200 ms (ttl/3) while one
 * unit of work runs every 100 ms. Each unit first asks redlease_lock_held():
 * a unit runs only while the lease is held and locally valid. When the
 * lease is lost (the key deleted or overwritten behind us, the validity
 * deadline passed, Redis unreachable), on_lost stops the work at once,
 * says why, releases the handle and the program exits with status 3.
 * SIGINT or SIGTERM stops the work and closes the client gracefully: the
 * held key is deleted in Redis, so the next worker need not wait for its TTL.
 *
 * Exit status: 0 all steps done; 1 could not start or acquire; 3 lease
 * lost, work stopped; 128 + N stopped by signal N (130 SIGINT, 143 SIGTERM).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redlease.h>
#include <redlease/libev.h>

#include "example-env.h"

enum { EXIT_DONE = 0, EXIT_SETUP = 1, EXIT_LOST = 3 };

#define TTL_MS 600
#define STEP_SECONDS 0.1

static struct ev_loop *loop;
static redlease_client *client;
static redlease_lock *lease;
static ev_timer step_timer;
static ev_signal sigint_watcher, sigterm_watcher;
static int steps_total = 20, steps_done;
static int renewals;
static int exit_status = EXIT_SETUP;
static int stopping; /* work is over: no more steps, whatever comes */

static void log_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (ev->type == REDLEASE_EV_RENEWED) {
        renewals++;
        printf("[worker] renewed: %lld ms of validity left\n", (long long)ev->remaining_ms);
    } else if (ev->type == REDLEASE_EV_RENEW_FAILED)
        printf("[worker] renewal failed (%s): lease at risk\n", redlease_strerror(ev->status));
    else if (ev->type == REDLEASE_EV_DISCONNECTED)
        printf("[worker] connection: %s\n", ev->detail ? ev->detail : redlease_strerror(ev->status));
}

/* Work is over for whatever reason: no unit of work runs after this. */
static void stop_work(int status)
{
    stopping = 1;
    exit_status = status;
    ev_timer_stop(loop, &step_timer);
}

/* The client is gone: with the signal watchers stopped the loop has nothing
 * left, so ev_run() returns. */
static void client_gone(void)
{
    client = NULL;
    ev_signal_stop(loop, &sigint_watcher);
    ev_signal_stop(loop, &sigterm_watcher);
}

static void on_released(redlease_lock *lk, int status, void *arg)
{
    (void)lk, (void)arg;
    printf("[worker] released: %s\n", redlease_strerror(status));
    redlease_client_free(client); /* fine from inside its own callback */
    client_gone();
}

static void on_closed(redlease_client *c, void *arg)
{
    (void)c, (void)arg;
    printf("[worker] client closed\n");
    client_gone();
}

static void do_step(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l, (void)w, (void)revents;
    if (!redlease_lock_held(lease)) { /* never act without the lease */
        printf("[worker] lease not safe to use right now: skipping this tick\n");
        return;
    }
    steps_done++;
    printf("[worker] step %d/%d (%lld ms of lease left)\n", steps_done, steps_total,
           (long long)redlease_lock_remaining_ms(lease));
    if (steps_done == steps_total) {
        stop_work(EXIT_DONE);
        redlease_release(lease, on_released, NULL);
    }
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)arg;
    if (reason == REDLEASE_LOST_CLOSED) return; /* our own graceful close */
    stop_work(EXIT_LOST); /* at once: another worker may hold it any moment */
    printf("[worker] LOST the lease after %d/%d steps: %s; work stopped\n", steps_done,
           steps_total, redlease_lost_reason_str(reason));
    redlease_release(lk, on_released, NULL);
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    (void)arg;
    if (status == REDLEASE_ECANCELED) return; /* a signal closed us first */
    if (status != REDLEASE_OK) {
        printf("[worker] could not acquire %s: %s\n", redlease_lock_key(lk), example_why(lk, status));
        stop_work(EXIT_SETUP);
        redlease_release(lk, on_released, NULL);
        return;
    }
    printf("[worker] holding %s (ttl %d ms, renewed every %d ms)\n", redlease_lock_key(lk),
           TTL_MS, TTL_MS / 3);
    ev_timer_start(loop, &step_timer);
}

static void on_signal(struct ev_loop *l, ev_signal *w, int revents)
{
    (void)l, (void)revents;
    if (stopping) return; /* already ending: the release finishes by itself */
    printf("[worker] signal %d (%s): stopping after %d/%d steps\n", w->signum,
           strsignal(w->signum), steps_done, steps_total);
    stop_work(128 + w->signum);
    /* Cancels a pending acquire or deletes the held key, then frees the
     * client; the lease handle ends with it. */
    redlease_client_close(client, on_closed, NULL);
}

static int parse_args(int argc, char **argv, const char **resource)
{
    *resource = argc > 1 ? argv[1] : "job:nightly";
    if (argc > 2) {
        char *end;
        long n = strtol(argv[2], &end, 10);
        if (*end || n < 1 || n > 1000000) return -1;
        steps_total = (int)n;
    }
    return argc > 3 ? -1 : 0;
}

int main(int argc, char **argv)
{
    const char *resource;
    if (parse_args(argc, argv, &resource) != 0) {
        fprintf(stderr, "usage: %s [RESOURCE [STEPS]]\n", argv[0]);
        return EXIT_SETUP;
    }
    /* Progress is watched from outside (tests, supervisors), and once the
     * client is gone the signal watchers are stopped, so the signals go back
     * to their default action: a second SIGTERM (timeout(1) sends one to the
     * process group as well) may then end the process before exit() would
     * flush a buffered line. Each line is written when it is printed. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    loop = EV_DEFAULT;
    redlease_client_options co;
    redlease_client_options_init(&co);
    example_server_from_env(&co);
    int rc = redlease_client_new(&client, &co);
    if (rc == REDLEASE_OK) rc = redlease_libev_attach(client, loop);
    if (rc != REDLEASE_OK) {
        fprintf(stderr, "redlease: %s\n", redlease_strerror(rc));
        redlease_client_free(client);
        return EXIT_SETUP;
    }
    redlease_client_set_event_cb(client, log_event, NULL);

    redlease_lock_options lo;
    redlease_lock_options_init(&lo);
    lo.ttl_ms = TTL_MS; /* renewal every ttl/3 = 200 ms */
    lo.wait_ms = 2000;  /* another worker may still be finishing */
    rc = redlease_acquire(client, resource, &lo, on_acquired, on_lost, NULL, &lease);
    if (rc != REDLEASE_OK) {
        fprintf(stderr, "acquire: %s\n", redlease_strerror(rc));
        redlease_client_free(client);
        return EXIT_SETUP;
    }
    ev_timer_init(&step_timer, do_step, STEP_SECONDS, STEP_SECONDS);
    ev_signal_init(&sigint_watcher, on_signal, SIGINT);
    ev_signal_init(&sigterm_watcher, on_signal, SIGTERM);
    ev_signal_start(loop, &sigint_watcher);
    ev_signal_start(loop, &sigterm_watcher);

    ev_run(loop, 0); /* returns when the client is gone and the watchers stopped */

    printf("[worker] exit %d: %d/%d steps done, %d renewals\n", exit_status, steps_done,
           steps_total, renewals);
    return exit_status;
}
