/* SPDX-License-Identifier: MIT */
/* libevent-basic: a cron-like job on libevent. Every 1100 ms, for 3 rounds,
 * it tries the lock once (wait_ms = 0): if another instance holds it, the
 * round is skipped, not queued; otherwise it works while the lease is held
 * and releases it. A second client plays an instance that died mid-run just
 * before we started: its lease (1000 ms, never renewed) blocks round 1,
 * which starts as soon as that lease is taken, until its TTL runs out.
 *
 *   REDLEASE_SOCKET=/path/to/redis.sock ./libevent-basic  (or REDLEASE_HOST /
 *   REDLEASE_PORT; default 127.0.0.1:6379)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>
#include <redlease.h>
#include <redlease/libevent.h>

#include "example-env.h"

#define ROUNDS 3

static struct event_base *base;
static struct event *round_ev;
static redlease_client *job, *rival;
static int rounds_started, worked, skipped, failed;

/* The handle's last callback, whatever happened in the round. */
static void end_round(redlease_lock *lk, int status, void *arg)
{
    (void)lk;
    int round = (int)(intptr_t)arg;
    if (status != REDLEASE_OK) {
        printf("[job] round %d: %s\n", round, redlease_strerror(status));
        failed++;
    }
    if (round < ROUNDS) return;
    event_free(round_ev); /* with the clients gone, dispatch has nothing left */
    redlease_client_free(job); /* safe from inside its own callback */
    redlease_client_free(rival);
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    int round = (int)(intptr_t)arg;
    if (status == REDLEASE_EBUSY) {
        printf("[job] round %d: another instance holds the lock, skipping\n", round);
        skipped++;
    } else if (status != REDLEASE_OK) {
        printf("[job] round %d: acquire: %s\n", round, example_why(lk, status));
        failed++;
    } else if (redlease_lock_held(lk)) { /* never act without the lease */
        printf("[job] round %d: working (%lld ms of lease left)\n", round,
               (long long)redlease_lock_remaining_ms(lk));
        worked++;
    } else {
        printf("[job] round %d: lease not safe to use, skipping\n", round);
    }
    int rc = redlease_release(lk, end_round, arg); /* ends the handle in every case */
    if (rc != REDLEASE_OK) end_round(lk, rc, arg);     /* no callback will come */
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk; /* work is synchronous here; on_acquired releases the handle */
    printf("[job] round %d: lost: %s\n", (int)(intptr_t)arg, redlease_lost_reason_str(reason));
}

static void run_round(evutil_socket_t fd, short what, void *unused)
{
    (void)fd, (void)what, (void)unused;
    void *round = (void *)(intptr_t)++rounds_started;
    if (rounds_started == ROUNDS) evtimer_del(round_ev);
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = 5000; /* well above what one round of work takes */
    o.wait_ms = 0;   /* one attempt: busy means skip this round, not wait */
    redlease_lock *lk;
    int rc = redlease_acquire(job, "cron:cleanup", &o, on_acquired, on_lost, round, &lk);
    if (rc != REDLEASE_OK) end_round(NULL, rc, round); /* no callback will come */
}

static void rival_acquired(redlease_lock *lk, int status, void *arg)
{
    (void)lk, (void)arg; /* never renewed: the lease lapses after its TTL */
    printf("[rival] acquire: %s\n", redlease_strerror(status));
    /* Round 1 now, while the rival's lease lives (its TTL runs from its
     * send, before this); then a round every 1100 ms (EV_PERSIST: however
     * long the last one took), past the rival's TTL, however slow
     * connecting was. */
    struct timeval every = {1, 100 * 1000};
    if (status != REDLEASE_OK || evtimer_add(round_ev, &every) != 0) {
        failed++;
        event_free(round_ev);
        redlease_client_free(job);
        redlease_client_free(rival);
        return;
    }
    run_round(-1, 0, NULL);
}

static redlease_client *make_client(void)
{
    redlease_client_options o;
    redlease_client_options_init(&o);
    example_server_from_env(&o);
    redlease_client *c;
    int rc = redlease_client_new(&c, &o);
    if (rc == REDLEASE_OK) rc = redlease_libevent_attach(c, base);
    if (rc == REDLEASE_OK) return c;
    fprintf(stderr, "redlease: %s\n", redlease_strerror(rc));
    exit(1);
}

int main(void)
{
    if (!(base = event_base_new())) return 1;
    job = make_client();
    rival = make_client();
    round_ev = event_new(base, -1, EV_PERSIST, run_round, NULL); /* added by rival_acquired */
    if (!round_ev) return 1;
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = 1000; /* ends between round 1 (at once) and round 2 (1100 ms) */
    o.renew_interval_ms = REDLEASE_RENEW_OFF;
    redlease_lock *lk; /* ended by redlease_client_free(rival) */
    int rc = redlease_acquire(rival, "cron:cleanup", &o, rival_acquired, NULL, NULL, &lk);
    if (rc != REDLEASE_OK) {
        fprintf(stderr, "acquire: %s\n", redlease_strerror(rc));
        return 1;
    }
    event_base_dispatch(base); /* returns once both clients are freed */
    event_base_free(base);
    printf("done: %d rounds worked, %d skipped, %d failed\n", worked, skipped, failed);
    return worked == ROUNDS - 1 && skipped == 1 && !failed ? 0 : 1;
}
