/* SPDX-License-Identifier: MIT */
/* The event loop an integration test program runs on. The suite (suite.c
 * and the suite_*.c it runs) holds the scenarios; each loop_<name>.c
 * implements this interface with one adapter, and the two are linked into
 * tests/integration/test_<name>. */
#ifndef REDLEASE_TESTLOOP_H
#define REDLEASE_TESTLOOP_H

#include <redlease.h>

extern const char testloop_name[];

void testloop_init(void);
/* The adapter's entry point, e.g. redlease_libev_attach(c, loop). */
int testloop_attach(redlease_client *c);
/* One blocking iteration that returns after handling events, or after about
 * max_ms if nothing happens. */
void testloop_run_once(int max_ms);
/* Whether anything is left on the loop that would keep its plain "run"
 * from returning (watchers, events, handles, sources). */
int testloop_pending(void);
/* The loop's own blocking run (ev_run, event_base_dispatch, uv_run, ...);
 * called once testloop_pending() is 0, it must return by itself. */
void testloop_run_to_end(void);
void testloop_destroy(void);

/* The adapter's timer on its own, made the way the adapter's attach makes
 * it, around a probe client that is never attached: each fire calls
 * redlease_client_on_timer(probe), counted in its stats.wakeups. The client
 * rarely disarms (it lets a due timer fire instead), so the timer contract
 * is tested here directly. free is the adapter's detach. */
void *testloop_timer_new(redlease_client *probe);
void testloop_timer_set(void *timer, int64_t after_ms);
void testloop_timer_free(void *timer);

#endif
