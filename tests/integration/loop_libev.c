/* SPDX-License-Identifier: MIT */
/* The integration suite on libev, through <redlease/libev.h>. */
#include <redlease/libev.h>

#include "testloop.h"

const char testloop_name[] = "libev";
static struct ev_loop *loop;
static ev_timer tick;

static void on_tick(struct ev_loop *l, ev_timer *w, int revents) { (void)l, (void)w, (void)revents; }

void testloop_init(void)
{
    loop = ev_default_loop(0);
    ev_timer_init(&tick, on_tick, 0., 0.);
}

int testloop_attach(redlease_client *c) { return redlease_libev_attach(c, loop); }

void testloop_run_once(int max_ms)
{
    ev_timer_set(&tick, max_ms / 1000.0, 0.);
    ev_timer_start(loop, &tick);
    ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &tick);
}

/* ev_run returns whether active watchers are left (libev >= 4.25). */
int testloop_pending(void) { return ev_run(loop, EVRUN_NOWAIT) != 0; }

void testloop_run_to_end(void) { ev_run(loop, 0); }

void testloop_destroy(void) { ev_loop_destroy(loop); }

void *testloop_timer_new(redlease_client *probe) { return redlease__libev_new(probe, loop); }
void testloop_timer_set(void *t, int64_t after_ms) { redlease__libev_timer_set(t, after_ms); }
void testloop_timer_free(void *t) { redlease__libev_detach(t); }
