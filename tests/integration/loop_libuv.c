/* SPDX-License-Identifier: MIT */
/* The integration suite on libuv, through <redlease/libuv.h>. */
#include <redlease/libuv.h>

#include "testloop.h"

const char testloop_name[] = "libuv";
static uv_loop_t loop;
static uv_timer_t tick;

static void on_tick(uv_timer_t *t) { (void)t; }

void testloop_init(void)
{
    uv_loop_init(&loop);
    uv_timer_init(&loop, &tick);
}

int testloop_attach(redlease_client *c) { return redlease_libuv_attach(c, &loop); }

void testloop_run_once(int max_ms)
{
    uv_timer_start(&tick, on_tick, (uint64_t)max_ms, 0);
    uv_run(&loop, UV_RUN_ONCE);
    uv_timer_stop(&tick); /* a stopped timer does not keep the loop alive */
}

int testloop_pending(void) { return uv_loop_alive(&loop); }

void testloop_run_to_end(void) { uv_run(&loop, UV_RUN_DEFAULT); }

void testloop_destroy(void)
{
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

void *testloop_timer_new(redlease_client *probe) { return redlease__libuv_new(probe, &loop); }
void testloop_timer_set(void *t, int64_t after_ms) { redlease__libuv_timer_set(t, after_ms); }
void testloop_timer_free(void *t) { redlease__libuv_detach(t); }
