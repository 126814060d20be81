/* SPDX-License-Identifier: MIT */
/* The client's clock, as the core reads it. */
#ifndef REDLEASE_CLOCK_H
#define REDLEASE_CLOCK_H

#include <stdint.h>

#include "redlease.h"

/* The owner's clock (redlease_client_set_clock), read through a pointer:
 * it may be replaced until a loop is attached, never after.
 * While a connection reports what one read of its socket brought
 * (rdl_conn_read_begin .. _end), the clock answers the time of that read:
 * every reply in it had come by then, so the time is never late, and a
 * pipelined client reads the clock once per read, not once per reply
 * (reading the clock costs, and this is the reply path). User code run
 * meanwhile (an event hook) makes it read the clock again:
 * rdl_clock_forget(). */
typedef struct rdl_clock {
    redlease_clock_fn fn;
    void *arg;
    int64_t read_at;
    int reading; /* read_at holds */
} rdl_clock;

static inline int64_t rdl_clock_now(const rdl_clock *k) { return k->reading ? k->read_at : k->fn(k->arg); }
static inline void rdl_clock_forget(rdl_clock *k) { k->reading = 0; }

#endif
