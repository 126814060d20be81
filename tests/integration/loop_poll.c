/* SPDX-License-Identifier: MIT */
/* A loop written by hand on poll(2), with its redlease adapter: the proof
 * that the adapter interface (struct redlease_loop_ops in <redlease.h>:
 * watch a socket, a one-shot timer) is all another loop needs, without
 * hiredis. The whole suite runs on it as tests/integration/test_poll.
 * docs/event-loops.md, "Your own event loop", walks through this file.
 *
 * The loop: a table of fd watchers (one per socket a client watches) and
 * a table of one-shot timers (one per redlease client). poll() sleeps until
 * an fd is ready or the earliest timer is due. */
#include <poll.h>
#include <stdint.h>
#include <time.h>

#include <redlease.h>

#include "testloop.h"

#define SLOTS 64

typedef struct watcher {
    redlease_client *client; /* NULL: slot free */
    int fd;
    int events;   /* REDLEASE_IO_READ, REDLEASE_IO_WRITE */
    unsigned gen; /* bumped on each reuse: see run_once */
} watcher;

typedef struct ptimer {
    redlease_client *client; /* NULL: slot free */
    int64_t at_us;           /* -1: disarmed */
} ptimer;

static watcher watchers[SLOTS];
static ptimer timers[SLOTS];

/* Tests: the next this many new sockets are refused (a first watch that
 * fails, as a loop out of memory would), as the table being full is. */
int loop_poll_refuse_watches;

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ------------------------------------------------------------- the ops */

/* loop_data is the client's timer slot, which names the client. */
static int poll_watch(void *loop_data, int fd, int events, void **slot)
{
    watcher *w = *slot;
    if (w) { /* the socket's watcher exists: change what it watches */
        w->events = events;
        return 0;
    }
    if (loop_poll_refuse_watches > 0) {
        loop_poll_refuse_watches--;
        return -1;
    }
    for (int i = 0; i < SLOTS; i++) {
        w = &watchers[i];
        if (w->client) continue;
        *w = (watcher){((ptimer *)loop_data)->client, fd, events, w->gen + 1};
        *slot = w;
        return 0;
    }
    return -1; /* table full: the client reports ECONN and retries later */
}

/* The client closes fd next (maybe from inside run_once's dispatch). */
static void poll_unwatch(void *loop_data, int fd, void *slot)
{
    (void)loop_data, (void)fd;
    ((watcher *)slot)->client = NULL;
}

static void poll_timer_set(void *loop_data, int64_t after_ms)
{
    ptimer *t = loop_data;
    t->at_us = after_ms < 0 ? -1 : now_us() + after_ms * 1000;
}

static void poll_detach(void *loop_data)
{
    ptimer *t = loop_data;
    t->client = NULL;
    t->at_us = -1;
}

static int poll_adapter_attach(redlease_client *c)
{
    static const redlease_loop_ops ops = {poll_watch, poll_unwatch, poll_timer_set, poll_detach};
    for (int i = 0; i < SLOTS; i++) {
        ptimer *t = &timers[i];
        if (t->client) continue;
        t->client = c;
        t->at_us = -1;
        int rc = redlease_client_attach_loop(c, &ops, t);
        if (rc != REDLEASE_OK) t->client = NULL;
        return rc;
    }
    return REDLEASE_ENOMEM;
}

/* --------------------------------------------------------- the loop */

static void run_once(int64_t max_ms)
{
    struct pollfd pfd[SLOTS];
    int slot[SLOTS];
    unsigned gen[SLOTS];
    int n = 0;
    for (int i = 0; i < SLOTS; i++) {
        watcher *w = &watchers[i];
        if (!w->client || !w->events) continue;
        short want = (short)(((w->events & REDLEASE_IO_READ) ? POLLIN : 0) |
                             ((w->events & REDLEASE_IO_WRITE) ? POLLOUT : 0));
        pfd[n] = (struct pollfd){w->fd, want, 0};
        slot[n] = i;
        gen[n++] = w->gen;
    }
    int64_t wait_us = max_ms < 0 ? -1 : max_ms * 1000, now = now_us();
    for (int i = 0; i < SLOTS; i++) {
        if (!timers[i].client || timers[i].at_us < 0) continue;
        int64_t d = timers[i].at_us > now ? timers[i].at_us - now : 0;
        if (wait_us < 0 || d < wait_us) wait_us = d;
    }
    /* round up: waking a little late is fine, early means a wasted wakeup */
    poll(pfd, (nfds_t)n, wait_us < 0 ? -1 : (int)((wait_us + 999) / 1000));

    for (int k = 0; k < n; k++) {
        watcher *w = &watchers[slot[k]];
        short re = pfd[k].revents;
        /* Handling one socket may free another (or this one, or a whole
         * client); the generation tells a freed or reused slot from the
         * one we polled. */
        if (!re || !w->client || w->gen != gen[k]) continue;
        int ev = ((re & POLLIN) ? REDLEASE_IO_READ : 0) | ((re & POLLOUT) ? REDLEASE_IO_WRITE : 0);
        if (re & (POLLERR | POLLHUP | POLLNVAL)) ev = w->events; /* the client finds the error */
        redlease_client_on_io(w->client, w->fd, ev);
    }
    now = now_us();
    for (int i = 0; i < SLOTS; i++) {
        ptimer *t = &timers[i];
        if (!t->client || t->at_us < 0 || t->at_us > now) continue;
        t->at_us = -1; /* one-shot; on_timer may re-arm it, or free the client */
        redlease_client_on_timer(t->client);
    }
}

static int pending(void)
{
    for (int i = 0; i < SLOTS; i++)
        if (watchers[i].client || (timers[i].client && timers[i].at_us >= 0)) return 1;
    return 0;
}

/* --------------------------------------------------- testloop interface */

const char testloop_name[] = "poll";
void testloop_init(void) {}
int testloop_attach(redlease_client *c) { return poll_adapter_attach(c); }
void testloop_run_once(int max_ms) { run_once(max_ms); }
int testloop_pending(void) { return pending(); }
void testloop_run_to_end(void)
{
    while (pending()) run_once(-1);
}
void testloop_destroy(void) {}

void *testloop_timer_new(redlease_client *probe)
{
    for (int i = 0; i < SLOTS; i++) {
        if (timers[i].client) continue;
        timers[i] = (ptimer){probe, -1};
        return &timers[i];
    }
    return NULL;
}
void testloop_timer_set(void *t, int64_t after_ms) { poll_timer_set(t, after_ms); }
void testloop_timer_free(void *t) { poll_detach(t); }
