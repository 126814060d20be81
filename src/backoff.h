/* SPDX-License-Identifier: MIT */
/* Jittered exponential backoff, shared by acquire retries and reconnects.
 * Randomness comes from an injected generator so tests can pin sequences. */
#ifndef REDLEASE_BACKOFF_H
#define REDLEASE_BACKOFF_H
#include <stdint.h>

typedef struct rdl_rng {
    uint32_t (*fn)(void *arg);
    void *arg;
} rdl_rng;

/* A uniform integer in [lo, hi] (hi >= lo). */
int64_t rdl_rng_between(const rdl_rng *r, int64_t lo, int64_t hi);

typedef struct rdl_backoff {
    int jitter;    /* enum redlease_jitter */
    int64_t base;  /* > 0 */
    int64_t max;   /* >= base */
    unsigned step; /* delays handed out so far */
    int64_t prev;  /* previous delay (decorrelated jitter) */
} rdl_backoff;

void rdl_backoff_init(rdl_backoff *b, int jitter, int64_t base, int64_t max);
/* Back to the first delay, same settings. */
static inline void rdl_backoff_reset(rdl_backoff *b) { rdl_backoff_init(b, b->jitter, b->base, b->max); }
/* The next delay in ms, in [0, max]. */
int64_t rdl_backoff_next(rdl_backoff *b, const rdl_rng *r);

/* The default generator: xorshift64* seeded from the OS. */
typedef struct rdl_xorshift {
    uint64_t s;
} rdl_xorshift;
void rdl_xorshift_seed(rdl_xorshift *x);
uint32_t rdl_xorshift_next(void *x);

#endif
