/* SPDX-License-Identifier: MIT */
/* The integration suite on libevent, through <redlease/libevent.h>. */
#include <redlease/libevent.h>

#include "testloop.h"

const char testloop_name[] = "libevent";
static struct event_base *base;
static struct event *tick;

static void on_tick(evutil_socket_t fd, short what, void *arg) { (void)fd, (void)what, (void)arg; }

void testloop_init(void)
{
    base = event_base_new();
    tick = evtimer_new(base, on_tick, NULL);
}

int testloop_attach(redlease_client *c) { return redlease_libevent_attach(c, base); }

void testloop_run_once(int max_ms)
{
    struct timeval tv = {max_ms / 1000, (max_ms % 1000) * 1000};
    evtimer_add(tick, &tv);
    event_base_loop(base, EVLOOP_ONCE);
    evtimer_del(tick);
}

int testloop_pending(void)
{
    return event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE |
                                               EVENT_BASE_COUNT_VIRTUAL) > 0;
}

/* Returns 1 at once when no events are left. */
void testloop_run_to_end(void) { event_base_dispatch(base); }

void testloop_destroy(void)
{
    event_free(tick);
    event_base_free(base);
}

void *testloop_timer_new(redlease_client *probe) { return redlease__libevent_new(probe, base); }
void testloop_timer_set(void *t, int64_t after_ms) { redlease__libevent_timer_set(t, after_ms); }
void testloop_timer_free(void *t) { redlease__libevent_detach(t); }
