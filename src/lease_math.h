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

/* A majority of n servers (a quorum's need). */
static inline int64_t rdl_majority(int64_t n) { return n / 2 + 1; }

/* What each of n servers may admit of a semaphore of limit permits when a
 * holder needs `need` of them (a quorum, docs/design.md 12.3): holders of
 * total weight W, each admitted by at least need servers, fill at least
 * W * need of the servers' n * cap, so W <= n * cap / need, which must not
 * exceed limit: cap is the largest with floor(n * cap / need) <= limit,
 * ceil((limit + 1) * need / n) - 1. At least 1 (need > n / 2), at most
 * limit; n = need = 1 (one server) is limit itself. */
static inline int64_t rdl_quorum_capacity(int64_t limit, int64_t n, int64_t need)
{
    return ((limit + 1) * need + n - 1) / n - 1;
}

#endif
