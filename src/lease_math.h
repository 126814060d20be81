/* SPDX-License-Identifier: MIT */
/* Lease arithmetic, in one place. A lease confirmed by a command sent at t0
 * (monotonic, read before sending) is valid locally until
 * t0 + ttl - drift, drift = ttl/100 + 2 ms: the key cannot expire on the
 * server before that, because the server started its TTL after t0, as long
 * as the two clocks' rates differ by less than 1%. */
#ifndef REDLEASE_LEASE_MATH_H
#define REDLEASE_LEASE_MATH_H
#include <stdint.h>

static inline int64_t rdl_drift(int64_t ttl) { return ttl / 100 + 2; }
static inline int64_t rdl_valid_until(int64_t t0, int64_t ttl) { return t0 + ttl - rdl_drift(ttl); }

/* How soon a failed renewal is retried: a quarter of the renewal interval,
 * at least 5 ms, and never later than halfway to the validity deadline. */
static inline int64_t rdl_renew_retry_at(int64_t now, int64_t interval, int64_t valid_until)
{
    int64_t d = interval / 4;
    if (d < 5) d = 5;
    int64_t half = (valid_until - now) / 2;
    if (half < d) d = half > 1 ? half : 1;
    return now + d;
}

#endif
